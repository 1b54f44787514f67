// The main thread's inbox: main-thread code receives mailbox messages as an
// actor does, under a real process id that actors cast to, monitor and link to.

import { createActorSystem, type DownMessage, type ExitMessage, type SystemMessage } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe, { type ProbeMsg } from './fixtures/probe.js';

const system = createActorSystem({ threads: 2 });
test.after.always(() => system.shutdown());

type Record = { op: 'record'; v: unknown };
const isRecord = (msg: unknown): msg is Record => typeof msg === 'object' && msg !== null && (msg as { op?: unknown }).op === 'record';
const isDown = (msg: unknown): msg is DownMessage => typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'DOWN';

test('an actor on a host thread casts to an inbox by ref and by name; whereis finds it on every thread', async (t) => {
  const inbox = system.inbox<Record>({ name: 'inbox-by-name' });
  t.teardown(() => inbox.close());
  const actor = await system.spawn(probe, {});
  t.is(system.whereis('inbox-by-name'), inbox.ref.id);
  t.is(system.threadOf(inbox.ref), 0);
  await eventually(async () => (await system.call(actor, { op: 'whereis', name: 'inbox-by-name' })) === inbox.ref.id, 'the name on the host');
  await system.call(actor, { op: 'cast', to: inbox.ref.id, msg: { op: 'record', v: 'by ref' } });
  await system.call(actor, { op: 'cast', to: 'inbox-by-name', msg: { op: 'record', v: 'by name' } });
  t.deepEqual(await inbox.receive(), { op: 'record', v: 'by ref' });
  t.deepEqual(await inbox.receive(), { op: 'record', v: 'by name' });
  t.is(await inbox.receive(undefined, 20), undefined, 'nothing more: undefined after the timeout');
});

test('a name held by a live actor cannot be taken by an inbox', (t) => {
  const first = system.inbox({ name: 'inbox-taken' });
  t.teardown(() => first.close());
  t.throws(() => system.inbox({ name: 'inbox-taken' }), { code: 'name_taken' });
  t.throws(() => system.inbox({ name: '<1.2>' }), { code: 'bad_argument' });
});

test('an actor monitoring an inbox sees DOWN with the close reason; later casts to it are dropped', async (t) => {
  const inbox = system.inbox({ name: 'inbox-closing' });
  const watcher = await system.spawn(probe, {});
  const ref = await system.call<string>(watcher, { op: 'monitor', to: inbox.ref.id });
  const fromSystem = system.monitor(inbox.ref);
  // The monitor was sent before this reply: it has reached the main thread.
  t.is(await system.call(watcher, { op: 'echo', v: 1 }), 1);
  inbox.close({ shutdown: 'done' });
  t.true(inbox.closed);
  t.is(system.whereis('inbox-closing'), undefined);
  t.deepEqual(await fromSystem, { shutdown: 'done' });
  const down = await eventually(async () => (await system.call<unknown[]>(watcher, { op: 'infos' })).find(isDown), 'DOWN');
  t.deepEqual(down, { type: 'DOWN', ref, id: inbox.ref.id, reason: { shutdown: 'done' } });
  system.cast(inbox.ref, { op: 'record', v: 'late' });
  t.is(await inbox.receive(), undefined);
  t.is(await system.monitor(inbox.ref), 'noproc');
  inbox.close();
});

test('close defaults to normal', async (t) => {
  const inbox = system.inbox();
  const down = system.monitor(inbox.ref);
  inbox.close();
  t.is(await down, 'normal');
});

test('an inbox monitoring an actor gets DOWN killed when it is killed, and DOWN noproc for one that is gone', async (t) => {
  const inbox = system.inbox();
  t.teardown(() => inbox.close());
  const actor = await system.spawn(probe, {});
  const ref = inbox.monitor(actor);
  // The monitor travels with the main thread's messages to the host; the kill apart: let it arrive first.
  await system.call(actor, { op: 'echo', v: 0 });
  system.kill(actor);
  t.deepEqual(await inbox.receive(isDown, 10_000), { type: 'DOWN', ref, id: actor.id, reason: 'killed' });
  const again = inbox.monitor(actor.id);
  t.deepEqual(await inbox.receive(isDown, 10_000), { type: 'DOWN', ref: again, id: actor.id, reason: 'noproc' });
  const unknown = inbox.monitor('no-such-name');
  t.deepEqual(await inbox.receive(isDown, 10_000), { type: 'DOWN', ref: unknown, id: 'no-such-name', reason: 'noproc' });
});

test('demonitor with flush drops a DOWN that has already arrived; without flush it stays', async (t) => {
  const inbox = system.inbox();
  t.teardown(() => inbox.close());
  const a = await system.spawn(probe, {});
  const b = await system.spawn(probe, {});
  const refA = inbox.monitor(a);
  const refB = inbox.monitor(b);
  await system.call(a, { op: 'echo', v: 0 });
  await system.call(b, { op: 'echo', v: 0 });
  system.kill(a);
  system.kill(b);
  // A kill from the main thread settles the main thread's monitors at once: both DOWNs are in the inbox.
  t.is(await system.monitor(a), 'noproc');
  t.is(await system.monitor(b), 'noproc');
  inbox.demonitor(refA, { flush: true });
  inbox.demonitor(refB);
  t.deepEqual(await inbox.receive(undefined, 0), { type: 'DOWN', ref: refB, id: b.id, reason: 'killed' });
  t.is(await inbox.receive(undefined, 0), undefined);
});

test('selective receive takes the matching message and keeps the others in order', async (t) => {
  const inbox = system.inbox<Record>();
  t.teardown(() => inbox.close());
  for (const v of [1, 2, 3, 4]) system.cast(inbox.ref, { op: 'record', v });
  t.deepEqual(await inbox.receive((msg) => isRecord(msg) && msg.v === 3), { op: 'record', v: 3 });
  const later = inbox.receive((msg) => isRecord(msg) && msg.v === 5, 10_000);
  system.cast(inbox.ref, { op: 'record', v: 5 });
  t.deepEqual(await later, { op: 'record', v: 5 });
  const rest: unknown[] = [];
  for (let msg = await inbox.receive(undefined, 0); msg !== undefined; msg = await inbox.receive(undefined, 0)) rest.push(msg);
  t.deepEqual(rest, [1, 2, 4].map((v) => ({ op: 'record', v })));
});

test('10,000 messages from an actor on another thread arrive in order', async (t) => {
  const inbox = system.inbox<Record>();
  t.teardown(() => inbox.close());
  const sender = await system.spawn(probe, {});
  system.cast<ProbeMsg>(sender, { op: 'castMany', to: inbox.ref.id, count: 10_000 });
  let expected = 0;
  for await (const msg of inbox) {
    if (!isRecord(msg) || msg.v !== expected) {
      t.fail(`message ${expected}: got ${JSON.stringify(msg)}`);
      return;
    }
    if (++expected === 10_000) break;
  }
  t.is(expected, 10_000);
  t.false(inbox.closed, 'leaving the loop leaves the inbox open');
});

test('close ends a pending receive and a pending iteration, and a later receive at once', async (t) => {
  const inbox = system.inbox();
  const pending = inbox.receive((msg) => msg === 'never sent');
  const iterated: unknown[] = [];
  const loop = (async () => {
    for await (const msg of inbox) iterated.push(msg);
    return 'ended';
  })();
  system.cast(inbox.ref, 'one');
  await eventually(() => iterated.length === 1 || undefined, 'the first message');
  inbox.close();
  t.is(await pending, undefined);
  t.is(await loop, 'ended');
  t.deepEqual(iterated, ['one']);
  t.is(await inbox.receive(), undefined);
});

test('the system shutdown closes an inbox with shutdown', async (t) => {
  const own = createActorSystem({ threads: 1 });
  const inbox = own.inbox();
  const down = own.monitor(inbox.ref);
  const pending = inbox.receive();
  await own.shutdown();
  t.is(await pending, undefined);
  t.is(await down, 'shutdown');
  t.true(inbox.closed);
  t.throws(() => own.inbox(), { code: 'shutting_down' });
});

test('an inbox traps exits: a linked actor that crashes sends EXIT; closing it abnormally takes a linked actor down', async (t) => {
  const inbox = system.inbox();
  const crashing = await system.spawn(probe, {});
  await system.call(crashing, { op: 'link', to: inbox.ref.id });
  system.cast(crashing, { op: 'throw' });
  const exit = await inbox.receive((msg): msg is ExitMessage => (msg as SystemMessage).type === 'EXIT', 10_000);
  t.like(exit, { type: 'EXIT', from: crashing.id, reason: { error: { message: 'cast handler threw' } } });
  t.false(inbox.closed);

  const linked = await system.spawn(probe, {});
  await system.call(linked, { op: 'link', to: inbox.ref.id });
  const down = system.monitor(linked);
  inbox.close({ shutdown: 'bye' });
  t.deepEqual(await down, { shutdown: 'bye' });
});

test('a predicate that throws rejects its receive and the inbox goes on; bad arguments are typed errors', async (t) => {
  const inbox = system.inbox();
  t.teardown(() => inbox.close());
  const failing = inbox.receive(() => {
    throw new Error('bad predicate');
  });
  system.cast(inbox.ref, 'kept');
  await t.throwsAsync(failing, { message: 'bad predicate' });
  t.is(await inbox.receive(), 'kept');
  await t.throwsAsync(inbox.receive('nope' as never), { code: 'bad_argument' });
  t.throws(() => inbox.close('whatever' as never), { code: 'bad_argument' });
  t.false(inbox.closed);
});

test('a call to an inbox gets no reply: it times out, or fails with the close reason', async (t) => {
  const inbox = system.inbox();
  await t.throwsAsync(system.call(inbox.ref, 'hello', 50), { code: 'timeout' });
  const pending = system.call(inbox.ref, 'hello', 10_000);
  inbox.close({ shutdown: 'closed' });
  await t.throwsAsync(pending, { code: 'exit' });
});

test('an inbox killed by an actor on a host thread closes with killed: its monitors see it, its receives end', async (t) => {
  const inbox = system.inbox({ name: 'inbox-killed' });
  const killer = await system.spawn(probe, {});
  const down = system.monitor(inbox.ref);
  const pending = inbox.receive();
  await system.call(killer, { op: 'kill', to: inbox.ref.id });
  t.is(await down, 'killed');
  t.is(await pending, undefined);
  t.true(inbox.closed);
  t.is(system.whereis('inbox-killed'), undefined);
});
