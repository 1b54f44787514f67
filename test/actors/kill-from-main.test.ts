// A kill issued on the main thread declares the actor dead there at once
// (routing, names, links and monitors on the main thread), without waiting
// for its host thread; these tests pin down the guarantees that must survive
// that shortcut and the races it opens.

import { setTimeout as sleep } from 'node:timers/promises';
import { createActorSystem, type DownMessage, type ExitReason } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import gatedSender from './fixtures/gated-sender.js';
import probe from './fixtures/probe.js';
import witness from './fixtures/witness.js';

function gate(): { buffer: SharedArrayBuffer; view: Int32Array } {
  const buffer = new SharedArrayBuffer(8);
  return { buffer, view: new Int32Array(buffer) };
}

/**
 * Blocks the main thread until a `waitThenSend` handler is running: a kill from
 * the main thread travels apart from the messages before it (it may overtake
 * them, as if the actor had not got to them yet), so the test must not kill
 * before the handler has started.
 */
function waitForHandler(view: Int32Array): void {
  if (Atomics.wait(view, 1, 0, 20_000) === 'timed-out') throw new Error('the handler never started');
}

/** Lets the main thread's outbox go out (a microtask) without letting it receive anything. */
const flushed = () => Promise.resolve();

test('a killed actor is dead on the main thread at once: name free, monitors and links there see killed, a new monitor gets noproc', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const target = await system.spawn(probe, {}, { name: 'doomed' });
  const watcher = await system.spawn(witness, { trap: true }, { placement: 'main' });
  const ref = await system.call<string>(watcher, { op: 'monitor', to: target.id });
  await system.call(watcher, { op: 'link', to: target.id });
  const down = system.monitor(target);
  await system.call(target, { op: 'echo', v: 0 }); // the monitor and the link have arrived
  const pendingCall = system.call(target, { op: 'sleep', ms: 10_000 });
  pendingCall.catch(() => {});

  system.kill(target);
  t.is(system.whereis('doomed'), undefined, 'the name is free before the host answers');
  t.is(system.threadOf(target), undefined);
  t.is(await down, 'killed');
  t.is(await system.monitor(target), 'noproc');
  const error = await t.throwsAsync(pendingCall);
  t.like(error, { code: 'killed' });
  const seen = await eventually(async () => {
    const got = await system.call<unknown[]>(watcher, { op: 'seen' });
    return got.length >= 2 ? got : undefined;
  }, 'DOWN and EXIT');
  t.deepEqual(seen, [
    { type: 'DOWN', ref, id: target.id, reason: 'killed' },
    { type: 'EXIT', from: target.id, reason: 'killed' },
  ]);
  await t.throwsAsync(system.call(target, { op: 'echo', v: 1 }), { code: 'noproc' });
});

test("what a killed actor sent before the kill reaches a main-thread watcher before its DOWN, and a stuck host is still terminated", async (t) => {
  const system = createActorSystem({ threads: 1, killTimeoutMs: 200 });
  t.teardown(() => system.shutdown());
  const sender = await system.spawn(gatedSender, undefined);
  const cohosted = await system.spawn(probe, {});
  t.is(system.threadOf(cohosted), system.threadOf(sender));
  const watcher = await system.spawn(witness, undefined, { placement: 'main' });
  const ref = await system.call<string>(watcher, { op: 'monitor', to: sender.id });
  await system.call(cohosted, { op: 'echo', v: 0 }); // same path as the monitor: it has arrived
  const cohostedDown = system.monitor(cohosted);
  const replaced = new Promise((resolve) => system.events.once('thread_replaced', resolve));
  const { buffer, view } = gate();

  system.cast(sender, { op: 'sendThenHang', to: watcher.id, count: 3, gate: buffer });
  await flushed();
  // Block the main thread until the host has posted the three casts (and hangs):
  // they wait, undelivered, in the main thread's port when the kill comes.
  // ('not-equal': the host raised the gate before this wait began, which is as good.)
  t.not(Atomics.wait(view, 0, 0, 20_000), 'timed-out');
  system.kill(sender);

  const seen = await eventually(async () => {
    const got = await system.call<unknown[]>(watcher, { op: 'seen' });
    return got.length >= 4 ? got : undefined;
  }, 'the casts and the DOWN');
  t.deepEqual(seen, [0, 1, 2, { type: 'DOWN', ref, id: sender.id, reason: 'killed' }]);
  // The host never confirms the kill (it is stuck): the kill timeout terminates it.
  await replaced;
  t.is(await cohostedDown, 'killed');
});

test('what a killed actor sends after the kill, before its thread hears of it, is dropped on the main thread', async (t) => {
  // A long kill timeout: the host is blocked on purpose and must not be terminated.
  const system = createActorSystem({ threads: 1, killTimeoutMs: 20_000 });
  t.teardown(() => system.shutdown());
  const sender = await system.spawn(gatedSender, undefined);
  const cohosted = await system.spawn(probe, {});
  const watcher = await system.spawn(witness, undefined, { placement: 'main' });
  const ref = await system.call<string>(watcher, { op: 'monitor', to: sender.id });
  await system.call(cohosted, { op: 'echo', v: 0 });
  const { buffer, view } = gate();

  system.cast(sender, { op: 'waitThenSend', to: watcher.id, v: 'late', gate: buffer });
  await flushed();
  waitForHandler(view);
  system.kill(sender);
  // The host wakes, its handler sends 'late', then it handles the kill.
  Atomics.store(view, 0, 1);
  Atomics.notify(view, 0);
  // This reply comes after anything the host sent before it: 'late' has arrived (and been dropped).
  t.is(await system.call(cohosted, { op: 'echo', v: 'after' }), 'after');
  t.deepEqual(await system.call(watcher, { op: 'seen' }), [{ type: 'DOWN', ref, id: sender.id, reason: 'killed' } satisfies DownMessage]);
});

test("a spawn that takes a killed actor's name waits until its host has confirmed the kill", async (t) => {
  const system = createActorSystem({ threads: 1, killTimeoutMs: 20_000 });
  t.teardown(() => system.shutdown());
  const old = await system.spawn(gatedSender, undefined, { name: 'worker' });
  const sink = await system.spawn(witness, undefined, { placement: 'main' });
  const { buffer, view } = gate();
  system.cast(old, { op: 'waitThenSend', to: sink.id, v: 'old handler ran', gate: buffer });
  await flushed();
  waitForHandler(view);

  system.kill(old);
  t.is(system.whereis('worker'), undefined);
  let replacement: string | undefined;
  const spawned = system.spawn(witness, undefined, { name: 'worker', placement: 'main' }).then((ref) => {
    replacement = ref.id;
  });
  // The old actor's thread is blocked inside its handler: the kill cannot be confirmed yet.
  await sleep(100);
  t.is(replacement, undefined, 'the new holder of the name has not started');
  Atomics.store(view, 0, 1);
  Atomics.notify(view, 0);
  await spawned;
  t.is(system.whereis('worker'), replacement);
  t.deepEqual(await system.call(sink, { op: 'seen' }), [], 'what the old one sent after its kill was dropped');
});

test("monitoring an actor that ended on its own gives noproc, also while its dedicated thread is being terminated", async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const alone = await system.spawn(probe, {}, { placement: 'dedicated' });
  const watcher = await system.spawn(witness, undefined, { placement: 'main' });
  const monitors = new Promise<[Promise<string>, Promise<ExitReason>]>((resolve) => {
    system.events.on('exited', (event) => {
      if (event.id !== alone.id) return;
      // Right after the event its thread, which ends with its only actor, is being terminated, not yet gone.
      queueMicrotask(() => resolve([system.call<string>(watcher, { op: 'monitor', to: alone.id }), system.monitor(alone)]));
    });
  });
  system.cast(alone, { op: 'stop', reason: 'normal' });
  const [ref, fromSystem] = await monitors;
  t.is(await fromSystem, 'noproc');
  const seen = await eventually(async () => {
    const got = await system.call<unknown[]>(watcher, { op: 'seen' });
    return got.length >= 1 ? got : undefined;
  }, 'DOWN');
  t.deepEqual(seen, [{ type: 'DOWN', ref: await ref, id: alone.id, reason: 'noproc' }]);
});
