import { type ActorRef, createActorSystem, type DownMessage, type ExitMessage } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe, { type ProbeMsg } from './fixtures/probe.js';

test('a handler that throws or rejects ends only its actor; a co-hosted actor goes on', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const thrower = await system.spawn(probe, {});
  const rejecter = await system.spawn(probe, {});
  const bystander = await system.spawn(probe, {});
  t.is(system.threadOf(thrower), system.threadOf(bystander));
  const thrown = system.monitor(thrower);
  const rejected = system.monitor(rejecter);
  system.cast(thrower, { op: 'throw' });
  system.cast(rejecter, { op: 'reject' });
  t.like(await thrown, { error: { name: 'Error', message: 'cast handler threw' } });
  t.like(await rejected, { error: { name: 'Error', message: 'cast handler rejected' } });
  t.is(await system.call(bystander, { op: 'echo', v: 'fine' }), 'fine');
});

test('an actor stuck in a synchronous loop is killed by replacing its thread; co-hosted actors die killed, others go on', async (t) => {
  const system = createActorSystem({ threads: 2, killTimeoutMs: 150 });
  t.teardown(() => system.shutdown());
  const actors: ActorRef<ProbeMsg>[] = [];
  for (let i = 0; i < 6; i++) actors.push(await system.spawn(probe, {}));
  const [threadX, threadY] = system.threads();
  const onX = actors.filter((a) => system.threadOf(a) === threadX);
  const onY = actors.filter((a) => system.threadOf(a) === threadY);
  const [spinner, cohosted] = onX as [ActorRef<ProbeMsg>, ActorRef<ProbeMsg>];
  const [watcher, other] = onY as [ActorRef<ProbeMsg>, ActorRef<ProbeMsg>];
  // Cross-thread observers of the co-hosted actor: a monitor, and a trapping link.
  const ref = await system.call<string>(watcher, { op: 'monitor', to: cohosted.id });
  await system.call(other, { op: 'trap', on: true });
  await system.call(other, { op: 'link', to: cohosted.id });
  await system.call(other, { op: 'call', to: cohosted.id, msg: { op: 'echo', v: 0 } });
  await system.call(watcher, { op: 'call', to: cohosted.id, msg: { op: 'echo', v: 0 } });
  const replaced = new Promise<{ thread: number; replacement: number; killed: string[] }>((resolve) => system.events.once('thread_replaced', resolve));
  const spinnerDown = system.monitor(spinner);
  const cohostedDown = system.monitor(cohosted);

  system.cast(spinner, { op: 'spin' });
  // The thread is stuck once a co-hosted actor stops answering.
  const stuck = await t.throwsAsync(system.call(cohosted, { op: 'echo', v: 0 }, 100));
  t.like(stuck, { code: 'timeout' });
  system.kill(spinner);

  t.is(await spinnerDown, 'killed');
  t.is(await cohostedDown, 'killed');
  const down = await eventually(async () => (await system.call<DownMessage[]>(watcher, { op: 'infos' })).find((m) => m.type === 'DOWN'), 'DOWN');
  t.deepEqual(down, { type: 'DOWN', ref, id: cohosted.id, reason: 'killed' });
  const exit = await eventually(async () => (await system.call<ExitMessage[]>(other, { op: 'infos' })).find((m) => m.type === 'EXIT'), 'EXIT');
  t.deepEqual(exit, { type: 'EXIT', from: cohosted.id, reason: 'killed' });
  t.is(await system.call(watcher, { op: 'echo', v: 'unaffected' }), 'unaffected');

  const event = await replaced;
  t.is(event.thread, threadX as number);
  t.true(event.killed.includes(spinner.id) && event.killed.includes(cohosted.id));
  t.false(system.threads().includes(event.thread));
  t.true(system.threads().includes(event.replacement));
  const fresh = await system.spawn(probe, {});
  t.is(await system.call(fresh, { op: 'echo', v: 'new' }), 'new');
  const error = await t.throwsAsync(system.call(cohosted, { op: 'echo', v: 1 }));
  t.like(error, { code: 'noproc' });
});

test('a kill from an actor on another thread also ends a stuck actor', async (t) => {
  const system = createActorSystem({ threads: 2, killTimeoutMs: 150 });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  let b = await system.spawn(probe, {});
  while (system.threadOf(b) === system.threadOf(a)) b = await system.spawn(probe, {});
  const down = system.monitor(b);
  system.cast(b, { op: 'spin' });
  await t.throwsAsync(system.call(b, { op: 'echo', v: 0 }, 100));
  await system.call(a, { op: 'kill', to: b.id });
  t.is(await down, 'killed');
  t.is(await system.call(a, { op: 'echo', v: 'ok' }), 'ok');
});

test('kill of an actor on a responsive thread removes it at once and drops further sends', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const sleeper = await system.spawn(probe, {});
  const neighbour = await system.spawn(probe, {});
  const pending = system.call(sleeper, { op: 'sleep', ms: 2000 }, 10_000);
  const down = system.monitor(sleeper);
  system.kill(sleeper);
  t.is(await down, 'killed');
  const error = await t.throwsAsync(pending);
  t.like(error, { code: 'killed' });
  system.cast(sleeper, { op: 'record', v: 1 });
  t.is(await system.call(neighbour, { op: 'echo', v: 'same thread still up' }), 'same thread still up');
  t.is(system.threads().length, 1);
});

test('a host thread that dies of an uncaught exception outside handlers is replaced; its actors die killed', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const a = await system.spawn(probe, {});
  const b = await system.spawn(probe, {});
  const onMain = await system.spawn(probe, {}, { placement: 'main' });
  await system.call(onMain, { op: 'link', to: b.id });
  await system.call(onMain, { op: 'trap', on: true });
  const replaced = new Promise<{ killed: string[] }>((resolve) => system.events.once('thread_replaced', resolve));
  const downB = system.monitor(b);
  system.cast(a, { op: 'throwLater' });
  t.is(await downB, 'killed');
  const exit = await eventually(async () => (await system.call<ExitMessage[]>(onMain, { op: 'infos' })).find((m) => m.type === 'EXIT'), 'EXIT');
  t.deepEqual(exit, { type: 'EXIT', from: b.id, reason: 'killed' });
  t.deepEqual((await replaced).killed.sort(), [a.id, b.id].sort());
  const fresh = await system.spawn(probe, {});
  t.is(await system.call(fresh, { op: 'echo', v: 'ok' }), 'ok');
});
