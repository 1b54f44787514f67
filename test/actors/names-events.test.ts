import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActorSystem, type ExitReason } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe from './fixtures/probe.js';

test('a registered name is seen by whereis on every thread, accepted by cast and call, and freed on death', async (t) => {
  const system = createActorSystem({ threads: 2 });
  t.teardown(() => system.shutdown());
  const named = await system.spawn(probe, {}, { name: 'registry-test' });
  let other = await system.spawn(probe, {});
  while (system.threadOf(other) === system.threadOf(named)) other = await system.spawn(probe, {});
  t.is(system.whereis('registry-test'), named.id);
  t.is(await system.call(other, { op: 'whereis', name: 'registry-test' }), named.id);
  system.cast('registry-test', { op: 'record', v: 'by name' });
  t.deepEqual(await system.call('registry-test', { op: 'log' }), ['by name']);
  t.deepEqual(await system.call(other, { op: 'call', to: 'registry-test', msg: { op: 'echo', v: 'via name' } }), { ok: 'via name' });

  // ctx.register from an actor; the other thread sees it, and a second taker is refused.
  t.true(await system.call(other, { op: 'register', name: 'late-name' }));
  t.is(system.whereis('late-name'), other.id);
  t.is(await system.call(named, { op: 'whereis', name: 'late-name' }), other.id);
  t.is(await system.call(named, { op: 'register', name: 'late-name' }), 'name_taken');

  system.kill('registry-test');
  await system.monitor(named);
  await eventually(() => system.whereis('registry-test') === undefined, 'the name to be freed');
  t.is(await eventually(async () => (await system.call(other, { op: 'whereis', name: 'registry-test' })) === null, 'freed on the other thread'), true);
  const again = await system.spawn(probe, {}, { name: 'registry-test' });
  t.is(system.whereis('registry-test'), again.id);
});

test('the system emits spawned and exited with the reason', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const spawned: string[] = [];
  const exited: [string, ExitReason][] = [];
  system.events.on('spawned', (event) => spawned.push(event.id));
  system.events.on('exited', (event) => exited.push([event.id, event.reason]));
  const a = await system.spawn(probe, {}, { name: 'evented' });
  t.deepEqual(spawned, [a.id]);
  system.cast(a, { op: 'throw' });
  await system.monitor(a);
  await eventually(() => exited.length === 1, 'exited');
  t.is(exited[0]?.[0], a.id);
  t.like(exited[0]?.[1], { error: { message: 'cast handler threw' } });
});

test('shutdown stops every actor with shutdown, runs terminate, leaves no thread running, and is idempotent', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-actors-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const reportFile = join(dir, 'terminated.txt');
  const system = createActorSystem({ threads: 2 });
  const onMain = await system.spawn(probe, { reportFile }, { placement: 'main' });
  const actors = await Promise.all(Array.from({ length: 4 }, () => system.spawn(probe, { reportFile })));
  await system.spawn(probe, {}, { placement: 'dedicated' });
  const reasons = actors.map((a) => system.monitor(a));
  const threadCount = system.threads().length;
  t.true(threadCount >= 3);
  const first = system.shutdown();
  const second = system.shutdown();
  t.is(first, second);
  await first;
  t.deepEqual(await Promise.all(reasons), ['shutdown', 'shutdown', 'shutdown', 'shutdown']);
  t.deepEqual(system.threads(), []);
  const lines = readFileSync(reportFile, 'utf8').trim().split('\n').sort();
  t.deepEqual(lines, [onMain, ...actors].map((a) => `${a.id} "shutdown"`).sort());
  await t.throwsAsync(system.spawn(probe, {}), { code: 'shutting_down' } as never);
});
