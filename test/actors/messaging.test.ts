import { type ActorRef, ActorError, createActorSystem } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe, { type ProbeMsg } from './fixtures/probe.js';

// One system for the file: these tests use their own actors and do not kill threads.
const system = createActorSystem({ threads: 2 });
test.after.always(() => system.shutdown());

/** Two actors on two different host threads. */
async function pair(): Promise<[ActorRef<ProbeMsg>, ActorRef<ProbeMsg>]> {
  const a = await system.spawn(probe, {});
  for (;;) {
    const b = await system.spawn(probe, {});
    if (system.threadOf(b) !== system.threadOf(a)) return [a, b];
  }
}

test('messages from one sender arrive in the order sent, across threads and from the main thread', async (t) => {
  const [a, b] = await pair();
  const count = 3000;
  system.cast(a, { op: 'castMany', to: b.id, count });
  for (let i = 0; i < count; i++) system.cast(b, { op: 'record', v: `m${i}` });
  const log = await eventually(async () => {
    const got = await system.call<unknown[]>(b, { op: 'log' });
    return got.length === 2 * count ? got : undefined;
  }, 'every message');
  const fromA = log.filter((v) => typeof v === 'number');
  const fromMain = log.filter((v) => typeof v === 'string');
  t.deepEqual(fromA, Array.from({ length: count }, (_, i) => i));
  t.deepEqual(fromMain, Array.from({ length: count }, (_, i) => `m${i}`));
});

test('selective receive takes the matching message and leaves the others in order', async (t) => {
  const b = await system.spawn(probe, {});
  const received = system.call(b, { op: 'receive', tag: 'x', timeoutMs: 5000 });
  for (const v of ['a', 'b', 'x', 'c']) system.cast(b, { op: 'record', v });
  t.deepEqual(await received, { op: 'record', v: 'x' });
  t.deepEqual(await system.call(b, { op: 'log' }), ['a', 'b', 'c']);
});

test('selective receive finds a match already queued, and gives undefined on timeout', async (t) => {
  const b = await system.spawn(probe, {});
  const received = system.call(b, { op: 'receive', tag: 'y', timeoutMs: 1000, delayMs: 100 });
  for (const v of ['p', 'y', 'q']) system.cast(b, { op: 'record', v });
  t.deepEqual(await received, { op: 'record', v: 'y' });
  t.deepEqual(await system.call(b, { op: 'log' }), ['p', 'q']);
  t.is(await system.call(b, { op: 'receive', tag: 'never', timeoutMs: 30 }), 'timeout');
});

test('a call that times out rejects with code timeout and its late reply is dropped', async (t) => {
  const [a, b] = await pair();
  const error = await t.throwsAsync(system.call(b, { op: 'sleep', ms: 300, v: 'late' }, 50), { instanceOf: ActorError });
  t.is(error?.code, 'timeout');
  // The late reply arrives while the next call waits: that call must get its own reply.
  t.is(await system.call(b, { op: 'echo', v: 'second' }), 'second');
  // The same between two host threads.
  const fromActor = await system.call(a, { op: 'call', to: b.id, msg: { op: 'sleep', ms: 300, v: 'late' }, timeoutMs: 50 });
  t.deepEqual(fromActor, { code: 'timeout', reason: undefined });
  t.deepEqual(await system.call(a, { op: 'call', to: b.id, msg: { op: 'echo', v: 'next' } }), { ok: 'next' });
});

test('a call to a dead actor or an unknown name rejects with noproc; a callee that dies rejects with exit', async (t) => {
  const b = await system.spawn(probe, {});
  system.kill(b);
  t.is(await system.monitor(b), 'noproc');
  const dead = await t.throwsAsync(system.call(b, { op: 'echo', v: 1 }), { instanceOf: ActorError });
  t.is(dead?.code, 'noproc');
  const unknown = await t.throwsAsync(system.call('no-such-name', { op: 'echo', v: 1 }), { instanceOf: ActorError });
  t.is(unknown?.code, 'noproc');
  const c = await system.spawn(probe, {});
  const crashed = await t.throwsAsync(system.call(c, { op: 'throw' }), { instanceOf: ActorError });
  t.is(crashed?.code, 'exit');
  t.like(crashed?.reason, { error: { message: 'call handler threw' } });
});

test('a message to a dead actor is dropped without a crash', async (t) => {
  const [a, b] = await pair();
  system.kill(b);
  await system.monitor(b);
  system.cast(b, { op: 'record', v: 1 });
  t.true(await system.call(a, { op: 'cast', to: b.id, msg: { op: 'record', v: 2 } }));
  t.is(await system.call(a, { op: 'echo', v: 'alive' }), 'alive');
});

test('a malformed message ends the actor with a clear MalformedMessage reason and its code', async (t) => {
  const b = await system.spawn(probe, {});
  const down = system.monitor(b);
  system.cast(b, 42 as unknown as ProbeMsg);
  const reason = await down;
  t.like(reason, { error: { name: 'MalformedMessage', code: 'malformed_message' } });
  t.regex((reason as { error: { message: string } }).error.message, /rejected a cast message: 42/);
});

test('a call handler that returns no { reply } ends the actor with code bad_return', async (t) => {
  const b = await system.spawn(probe, {});
  const error = await t.throwsAsync(system.call(b, { op: 'badReply' }), { instanceOf: ActorError });
  t.like(error, { code: 'exit', reason: { error: { name: 'ActorError', code: 'bad_return' } } });
});

test('a stop result replies first, then the actor ends with the given reason', async (t) => {
  const b = await system.spawn(probe, {});
  const down = system.monitor(b);
  t.is(await system.call(b, { op: 'stop', reason: { shutdown: 'done' } }), 'stopping');
  t.deepEqual(await down, { shutdown: 'done' });
});

test('a message that cannot be copied to another thread gives a typed error or is dropped, never a crash', async (t) => {
  const b = await system.spawn(probe, {});
  const fn = () => 1;
  const error = await t.throwsAsync(system.call(b, { op: 'echo', v: fn } as unknown as ProbeMsg));
  t.like(error, { name: 'ActorError', code: 'bad_argument' });
  system.cast(b, { op: 'record', v: fn } as unknown as ProbeMsg);
  system.cast(b, { op: 'record', v: 'after' });
  t.deepEqual(await system.call(b, { op: 'log' }), ['after']);
  const spawn = await t.throwsAsync(system.spawn(probe, { reportFile: fn } as never));
  t.like(spawn, { name: 'ActorError', code: 'init_failed', reason: { error: { name: 'DataCloneError' } } });
});

// Serial: ava runs serial tests before the others, so blocking the main thread delays no other test's timers.
test.serial('actors on two host threads talk directly: their messages flow while the main thread is blocked', async (t) => {
  const [a, b] = await pair();
  system.cast(a, { op: 'castMany', to: b.id, count: 1000, delayMs: 20 });
  await null; // the cast leaves at the next microtask
  // Block the main thread well past a's delay. A route through the main thread
  // would hold every message until after the call below has been answered.
  const until = Date.now() + 400;
  while (Date.now() < until) {
    // busy on purpose
  }
  const log = await system.call<number[]>(b, { op: 'log' });
  t.is(log.length, 1000);
});
