// A kill must end only its actor when the host thread is healthy but busy:
// the host takes it between two handlers, however long its batch, and the
// watchdog terminates a thread (with every co-hosted actor) only when it is
// stuck, not when it is slow (see host-status.ts and ActorSystem's watchdog).
// Short kill timeouts make the failure it guards against (a busy host deemed
// stuck) certain.

import { type ActorRef, type ActorSystem, createActorSystem } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe, { type ProbeMsg } from './fixtures/probe.js';

/**
 * 800 one-millisecond handlers: a flood that keeps a host busy for 0.8 s at
 * least (8 kill timeouts), several seconds on a loaded machine, where every
 * time the thread is descheduled stretches the handler it is in.
 */
const FLOOD = 800;
/** For calls queued behind a flood: a loaded machine may take a long time to get through it. */
const PATIENT_MS = 60_000;

function counter(): { buffer: SharedArrayBuffer; view: Int32Array } {
  const buffer = new SharedArrayBuffer(4);
  return { buffer, view: new Int32Array(buffer) };
}

/** Blocks the main thread until the busy actor has counted one handler: the host is inside its work. */
function waitUntilStarted(view: Int32Array): void {
  if (Atomics.wait(view, 0, 0, 20_000) === 'timed-out') throw new Error('the busy actor never started');
}

/** Records thread replacements and deaths other than the victim's, from now on. */
function watchCollateral(system: ActorSystem, victim: ActorRef): { replaced: number[]; died: string[] } {
  const seen = { replaced: [] as number[], died: [] as string[] };
  system.events.on('thread_replaced', (event) => seen.replaced.push(event.thread));
  system.events.on('exited', (event) => {
    if (event.id !== victim.id) seen.died.push(event.id);
  });
  return seen;
}

/** `count` pooled actors, grouped by thread. */
async function spawnByThread(system: ActorSystem, count: number): Promise<Map<number, ActorRef<ProbeMsg>[]>> {
  const byThread = new Map<number, ActorRef<ProbeMsg>[]>();
  for (let i = 0; i < count; i++) {
    const ref = await system.spawn(probe, {});
    const thread = system.threadOf(ref) as number;
    byThread.set(thread, [...(byThread.get(thread) ?? []), ref]);
  }
  return byThread;
}

test('a kill reaches a host busy with a long flood from the main thread to a co-hosted actor: only the killed actor dies', async (t) => {
  const system = createActorSystem({ threads: 1, killTimeoutMs: 100 });
  t.teardown(() => system.shutdown());
  const busy = await system.spawn(probe, {});
  const victim = await system.spawn(probe, {}, { name: 'victim' });
  const bystander = await system.spawn(probe, {});
  const threads = system.threads();
  const collateral = watchCollateral(system, victim);
  const victimDown = system.monitor(victim);
  const { buffer, view } = counter();

  for (let i = 0; i < FLOOD; i++) system.cast(busy, { op: 'work', ms: 1, v: i, counter: buffer });
  await null; // the flood leaves at the next microtask
  waitUntilStarted(view);
  system.kill(victim);

  t.is(await victimDown, 'killed');
  // A spawn that takes the victim's name waits until its host has confirmed the kill.
  await system.spawn(probe, {}, { name: 'victim', placement: 'main' });
  t.true(Atomics.load(view, 0) < FLOOD, 'the host took the kill in the middle of the flood');
  t.is(await system.call(bystander, { op: 'echo', v: 'alive' }, PATIENT_MS), 'alive');
  const log = await system.call<number[]>(busy, { op: 'log' }, PATIENT_MS);
  t.deepEqual(log, Array.from({ length: FLOOD }, (_, i) => i));
  t.deepEqual(collateral, { replaced: [], died: [] });
  t.deepEqual(system.threads(), threads);
});

test('a kill reaches a host busy with a flood from another host thread to a co-hosted actor: only the killed actor dies', async (t) => {
  const system = createActorSystem({ threads: 2, killTimeoutMs: 100 });
  t.teardown(() => system.shutdown());
  const byThread = await spawnByThread(system, 6);
  const [onX, onY] = [...byThread.values()] as [ActorRef<ProbeMsg>[], ActorRef<ProbeMsg>[]];
  const sender = onX[0] as ActorRef<ProbeMsg>;
  const [busy, victim, bystander] = onY as [ActorRef<ProbeMsg>, ActorRef<ProbeMsg>, ActorRef<ProbeMsg>];
  const threads = system.threads();
  const collateral = watchCollateral(system, victim);
  const victimDown = system.monitor(victim);
  const { buffer, view } = counter();

  system.cast(sender, { op: 'castMany', to: busy.id, count: FLOOD, workMs: 1, counter: buffer });
  await null;
  waitUntilStarted(view);
  system.kill(victim);

  t.is(await victimDown, 'killed');
  t.is(await system.call(bystander, { op: 'echo', v: 'alive' }, PATIENT_MS), 'alive');
  await eventually(async () => (await system.call<number[]>(busy, { op: 'log' }, PATIENT_MS)).length === FLOOD, 'the whole flood', PATIENT_MS);
  t.deepEqual(await system.call(busy, { op: 'log' }), Array.from({ length: FLOOD }, (_, i) => i));
  t.deepEqual(collateral, { replaced: [], died: [] });
  t.deepEqual(system.threads(), threads);
});

test("a kill waits for another actor's long synchronous handler instead of terminating the thread", async (t) => {
  const system = createActorSystem({ threads: 1, killTimeoutMs: 100 });
  t.teardown(() => system.shutdown());
  const busy = await system.spawn(probe, {});
  const victim = await system.spawn(probe, {}, { name: 'victim' });
  const bystander = await system.spawn(probe, {});
  const collateral = watchCollateral(system, victim);
  const victimDown = system.monitor(victim);
  const { buffer, view } = counter();

  // The first handler signals, the second keeps the thread in one handler for 15 kill timeouts.
  system.cast(busy, { op: 'work', ms: 0, counter: buffer });
  system.cast(busy, { op: 'work', ms: 1500, v: 'long' });
  await null;
  waitUntilStarted(view);
  system.kill(victim);

  t.is(await victimDown, 'killed');
  await system.spawn(probe, {}, { name: 'victim', placement: 'main' });
  t.deepEqual(await system.call(busy, { op: 'log' }, PATIENT_MS), ['long']);
  t.is(await system.call(bystander, { op: 'echo', v: 'alive' }, PATIENT_MS), 'alive');
  t.deepEqual(collateral, { replaced: [], died: [] });
});

test('a host stuck outside the killed actor is terminated after stuckThreadTimeoutMs; its actors die killed', async (t) => {
  const system = createActorSystem({ threads: 1, killTimeoutMs: 100, stuckThreadTimeoutMs: 400 });
  t.teardown(() => system.shutdown());
  const spinner = await system.spawn(probe, {});
  const victim = await system.spawn(probe, {});
  const bystander = await system.spawn(probe, {});
  const replaced = new Promise<{ thread: number; killed: string[] }>((resolve) => system.events.once('thread_replaced', resolve));
  const bystanderDown = system.monitor(bystander);
  const spinnerDown = system.monitor(spinner);

  system.cast(spinner, { op: 'spin' });
  const stuck = await t.throwsAsync(system.call(bystander, { op: 'echo', v: 0 }, 100));
  t.like(stuck, { code: 'timeout' });
  system.kill(victim);

  t.deepEqual((await replaced).killed.sort(), [spinner.id, victim.id, bystander.id].sort());
  t.is(await spinnerDown, 'killed');
  t.is(await bystanderDown, 'killed');
  const fresh = await system.spawn(probe, {});
  t.is(await system.call(fresh, { op: 'echo', v: 'new thread' }), 'new thread');
});

test('kill timeouts must be positive numbers of milliseconds', (t) => {
  for (const options of [{ killTimeoutMs: 0 }, { killTimeoutMs: Number.NaN }, { stuckThreadTimeoutMs: -1 }, { stuckThreadTimeoutMs: '5' as unknown as number }]) {
    t.throws(() => createActorSystem({ threads: 1, ...options }), { code: 'bad_argument' }, JSON.stringify(options));
  }
});
