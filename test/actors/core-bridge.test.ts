import { setTimeout as sleep } from 'node:timers/promises';
import { threadId } from 'node:worker_threads';
import { createActorSystem } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
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

test('an error thrown by the core keeps its code across the bridge; no core within coreWaitMs gives no_core', async (t) => {
  const system = createActorSystem({ threads: 1, core: new FakeCore() });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  const error = await t.throwsAsync(system.call(a, { op: 'core', method: 'halt', args: [] }));
  t.like(error, { code: 'exit', reason: { error: { name: 'JobsError', code: 'halt', message: 'job halted' } } });

  const bare = createActorSystem({ threads: 1, coreWaitMs: 100 });
  t.teardown(() => bare.shutdown());
  const c = await bare.spawn(probe, {});
  const missing = await t.throwsAsync(bare.call(c, { op: 'core', method: 'add', args: [1] }));
  t.like(missing, { reason: { error: { name: 'ActorError', code: 'no_core' } } });
});

test('a bridge call to a method the core lacks fails with bad_argument, in a pool actor and on the main thread', async (t) => {
  const system = createActorSystem({ threads: 1, core: new FakeCore() });
  t.teardown(() => system.shutdown());
  for (const placement of ['pool', 'main'] as const) {
    const a = await system.spawn(probe, {}, { placement });
    const error = await t.throwsAsync(system.call(a, { op: 'core', method: 'subtract', args: [1] }));
    t.like(error, { code: 'exit', reason: { error: { name: 'ActorError', code: 'bad_argument' } } }, placement);
  }
});

/** A core that says which one it is. */
class NamedCore {
  readonly name: string;
  #release: (() => void) | undefined;
  constructor(name: string) {
    this.name = name;
  }
  whoami(): string {
    return this.name;
  }
  /** Answers once `release` is called: a call still running on this core. */
  slowRunning = false;
  slow(): Promise<string> {
    this.slowRunning = true;
    return new Promise((resolve) => {
      this.#release = () => resolve(`${this.name} (slow)`);
    });
  }
  release(): boolean {
    this.#release?.();
    return this.#release !== undefined;
  }
}

test('setCore swaps the core under running actors: new calls go to the new one, a running call ends on the old one', async (t) => {
  const a = new NamedCore('a');
  const system = createActorSystem({ threads: 2, core: a });
  t.teardown(() => system.shutdown());
  const actors = [await system.spawn(probe, {}), await system.spawn(probe, {}), await system.spawn(probe, {}, { placement: 'main' })];
  const ask = (i: number) => system.call<string>(actors[i % actors.length] as { id: string }, { op: 'core', method: 'whoami', args: [] });
  t.deepEqual(await Promise.all([0, 1, 2].map(ask)), ['a', 'a', 'a']);
  // On an actor of its own: an actor waits for its bridge call before it takes its next message.
  const slowCaller = await system.spawn(probe, {});
  const slow = system.call(slowCaller, { op: 'core', method: 'slow', args: [] }, 10_000);
  await eventually(() => a.slowRunning, 'the slow call running');
  const b = new NamedCore('b');
  // A stream of calls from every actor across the swap: each one answered by one core, never an error.
  const during = Array.from({ length: 60 }, (_, i) => ask(i));
  system.setCore(b);
  const after = Array.from({ length: 30 }, (_, i) => ask(i));
  for (const answer of await Promise.all(during)) t.true(answer === 'a' || answer === 'b');
  t.deepEqual(new Set(await Promise.all(after)), new Set(['b']));
  await eventually(() => a.release(), 'the slow call on the old core');
  t.is(await slow, 'a (slow)');
});

test('calls made while no core is set wait for setCore and then complete', async (t) => {
  const system = createActorSystem({ threads: 1, coreWaitMs: 20_000 });
  t.teardown(() => system.shutdown());
  const actor = await system.spawn(probe, {});
  const onMain = await system.spawn(probe, {}, { placement: 'main' });
  const waiting = [
    system.call(actor, { op: 'core', method: 'whoami', args: [] }, 30_000),
    system.call(onMain, { op: 'core', method: 'whoami', args: [] }, 30_000),
  ];
  let settled = false;
  void Promise.all(waiting).then(() => {
    settled = true;
  });
  // The actor is parked on the bridge; its thread goes on serving others.
  t.is(await system.call(await system.spawn(probe, {}), { op: 'echo', v: 'free' }), 'free');
  t.false(settled);
  system.setCore(new NamedCore('first'));
  t.deepEqual(await Promise.all(waiting), ['first', 'first']);

  // A gap: the core is taken away, then a new one comes.
  system.setCore(undefined);
  const inGap = system.call(actor, { op: 'core', method: 'whoami', args: [] }, 30_000);
  // Whether the call reaches the main thread within the gap or after it, it is answered by the next core.
  await sleep(50);
  system.setCore(new NamedCore('second'));
  t.is(await inGap, 'second');
});

test('a gap longer than coreWaitMs rejects the waiting call with no_core, as an ActorError in the actor', async (t) => {
  const system = createActorSystem({ threads: 1, core: new NamedCore('gone'), coreWaitMs: 150 });
  t.teardown(() => system.shutdown());
  const actor = await system.spawn(probe, {});
  t.is(await system.call(actor, { op: 'core', method: 'whoami', args: [] }), 'gone');
  system.setCore(undefined);
  const error = await t.throwsAsync(system.call(actor, { op: 'core', method: 'whoami', args: [] }, 10_000));
  t.like(error, { code: 'exit', reason: { error: { name: 'ActorError', code: 'no_core' } } });
  t.throws(() => system.setCore(42 as unknown as object), { code: 'bad_argument' });
  t.throws(() => createActorSystem({ threads: 1, coreWaitMs: -1 }), { code: 'bad_argument' });
});
