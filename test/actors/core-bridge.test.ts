import { threadId } from 'node:worker_threads';
import { createActorSystem } from '@jobtree/actors';
import test from 'ava';
import probe from './fixtures/probe.js';

/** A stand-in for the Jobs object: lives on the main thread, one method = one transaction. */
class FakeCore {
  total = 0;
  #fire: ((value: string) => void) | undefined;
  add(n: number): { total: number; thread: number } {
    this.total += n;
    return { total: this.total, thread: threadId };
  }
  watch(): Promise<string> {
    return new Promise((resolve) => {
      this.#fire = resolve;
    });
  }
  fire(value: string): boolean {
    this.#fire?.(value);
    return this.#fire !== undefined;
  }
  halt(): never {
    throw Object.assign(new Error('job halted'), { name: 'JobsError', code: 'halt' });
  }
}

test('a bridge call runs the method on the main thread and returns its result to the actor', async (t) => {
  const core = new FakeCore();
  const system = createActorSystem({ threads: 2, core });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  const b = await system.spawn(probe, {});
  const onMain = await system.spawn(probe, {}, { placement: 'main' });
  t.deepEqual(await system.call(a, { op: 'core', method: 'add', args: [5] }), { total: 5, thread: threadId });
  t.deepEqual(await system.call(b, { op: 'core', method: 'add', args: [2] }), { total: 7, thread: threadId });
  t.deepEqual(await system.call(onMain, { op: 'core', method: 'add', args: [1] }), { total: 8, thread: threadId });
  t.is(core.total, 8);
});

test('a promise returned by the core (a watch) resolves in the actor when the main thread settles it', async (t) => {
  const core = new FakeCore();
  const system = createActorSystem({ threads: 1, core });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  let settled = false;
  const watching = system.call(a, { op: 'core', method: 'watch', args: [] }, 10_000).then((value) => {
    settled = true;
    return value;
  });
  // The actor is parked on the watch; the same thread keeps serving others meanwhile.
  const b = await system.spawn(probe, {});
  t.is(await system.call(b, { op: 'echo', v: 1 }), 1);
  t.false(settled);
  t.true(core.fire('changed'));
  t.is(await watching, 'changed');
});

test('an error thrown by the core keeps its code across the bridge; no core gives no_core', async (t) => {
  const system = createActorSystem({ threads: 1, core: new FakeCore() });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  const error = await t.throwsAsync(system.call(a, { op: 'core', method: 'halt', args: [] }));
  t.like(error, { code: 'exit', reason: { error: { name: 'JobsError', code: 'halt', message: 'job halted' } } });

  const bare = createActorSystem({ threads: 1 });
  t.teardown(() => bare.shutdown());
  const c = await bare.spawn(probe, {});
  const missing = await t.throwsAsync(bare.call(c, { op: 'core', method: 'add', args: [1] }));
  t.like(missing, { reason: { error: { name: 'ActorError', code: 'no_core' } } });
});
