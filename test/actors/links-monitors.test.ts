import { createActorSystem, type DownMessage, type ExitMessage } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe from './fixtures/probe.js';

const system = createActorSystem({ threads: 2 });
test.after.always(() => system.shutdown());

const probeUrl = new URL('./fixtures/probe.ts', import.meta.url).href;

/**
 * Signals from one actor to another keep their order (as in Erlang), but a
 * signal from the main thread may overtake them: a call on the same path as a
 * link or monitor makes sure it arrived before the test acts on the target.
 */
async function settled(from: string, to: string): Promise<void> {
  await system.call(from, { op: 'call', to, msg: { op: 'echo', v: 0 } });
}

async function infos(id: string): Promise<(DownMessage | ExitMessage)[]> {
  return system.call(id, { op: 'infos' });
}

test('a monitor gets DOWN with killed when its target is killed, and DOWN noproc at once for a dead target', async (t) => {
  const watcher = await system.spawn(probe, {});
  const target = await system.spawn(probe, {});
  const ref = await system.call<string>(watcher, { op: 'monitor', to: target.id });
  await settled(watcher.id, target.id);
  system.kill(target);
  const down = await eventually(async () => (await infos(watcher.id)).find((m) => m.type === 'DOWN'), 'DOWN');
  t.deepEqual(down, { type: 'DOWN', ref, id: target.id, reason: 'killed' });
  const ref2 = await system.call<string>(watcher, { op: 'monitor', to: target.id });
  const noproc = await eventually(async () => (await infos(watcher.id)).find((m) => m.type === 'DOWN' && m.ref === ref2), 'DOWN noproc');
  t.is((noproc as DownMessage).reason, 'noproc');
  t.is(await system.monitor(target), 'noproc');
});

test('an abnormal exit propagates along links to non-trapping actors; each dies with that reason', async (t) => {
  const a = await system.spawn(probe, {});
  const b = await system.spawn(probe, {});
  const c = await system.spawn(probe, {});
  await system.call(a, { op: 'link', to: b.id });
  await settled(a.id, b.id);
  await system.call(b, { op: 'link', to: c.id });
  await settled(b.id, c.id);
  const downA = system.monitor(a);
  const downB = system.monitor(b);
  // The monitors must be in place before c's exit signal races them there.
  await system.call(a, { op: 'echo', v: 0 });
  await system.call(b, { op: 'echo', v: 0 });
  system.cast(c, { op: 'throw' });
  t.like(await downB, { error: { message: 'cast handler threw' } });
  t.like(await downA, { error: { message: 'cast handler threw' } });
});

test('a normal exit does not take linked actors down; a trapping actor gets EXIT normal', async (t) => {
  const plain = await system.spawn(probe, {});
  const trapping = await system.spawn(probe, { trap: true });
  const child = await system.spawn(probe, {});
  await system.call(plain, { op: 'link', to: child.id });
  await settled(plain.id, child.id);
  await system.call(trapping, { op: 'link', to: child.id });
  await settled(trapping.id, child.id);
  const childDown = system.monitor(child);
  system.cast(child, { op: 'stop', reason: 'normal' });
  t.is(await childDown, 'normal');
  const exit = await eventually(async () => (await infos(trapping.id)).find((m) => m.type === 'EXIT'), 'EXIT');
  t.deepEqual(exit, { type: 'EXIT', from: child.id, reason: 'normal' });
  t.is(await system.call(plain, { op: 'echo', v: 'still here' }), 'still here');
});

test('trapExit turns a linked crash and exit() into EXIT messages; kill is untrappable', async (t) => {
  const trapping = await system.spawn(probe, { trap: true });
  const child = await system.spawn(probe, {});
  await system.call(trapping, { op: 'link', to: child.id });
  await settled(trapping.id, child.id);
  system.cast(child, { op: 'throw' });
  const exit = await eventually(async () => (await infos(trapping.id)).find((m) => m.type === 'EXIT'), 'EXIT');
  t.like(exit, { type: 'EXIT', from: child.id, reason: { error: { message: 'cast handler threw' } } });
  system.exit(trapping, 'shutdown');
  await eventually(async () => (await infos(trapping.id)).some((m) => m.type === 'EXIT' && m.reason === 'shutdown'), 'EXIT shutdown');
  const down = system.monitor(trapping);
  system.exit(trapping, 'kill');
  t.is(await down, 'killed');
});

test('exit(target, normal) is ignored by a non-trapping actor; any other reason ends it', async (t) => {
  const b = await system.spawn(probe, {});
  system.exit(b, 'normal');
  t.is(await system.call(b, { op: 'echo', v: 1 }), 1);
  const down = system.monitor(b);
  system.exit(b, { shutdown: 'asked' });
  t.deepEqual(await down, { shutdown: 'asked' });
});

test('after unlink, a crash no longer propagates; a kill reaches a linked actor as killed', async (t) => {
  const a = await system.spawn(probe, {});
  const b = await system.spawn(probe, {});
  await system.call(a, { op: 'link', to: b.id });
  await settled(a.id, b.id);
  await system.call(a, { op: 'unlink', to: b.id });
  await settled(a.id, b.id);
  const downB = system.monitor(b);
  system.cast(b, { op: 'throw' });
  t.like(await downB, { error: { message: 'cast handler threw' } });
  t.is(await system.call(a, { op: 'echo', v: 'alive' }), 'alive');
  const c = await system.spawn(probe, {});
  await system.call(a, { op: 'link', to: c.id });
  await settled(a.id, c.id);
  const downA = system.monitor(a);
  await system.call(a, { op: 'echo', v: 0 });
  system.kill(c);
  t.is(await downA, 'killed');
});

test('spawn_link: a child that crashes right after start is seen by its trapping parent', async (t) => {
  const parent = await system.spawn(probe, { trap: true });
  const child = await system.call<{ id: string }>(parent, { op: 'spawn', module: probeUrl, args: {}, link: true });
  system.cast(child, { op: 'throw' });
  const exit = await eventually(async () => (await infos(parent.id)).find((m) => m.type === 'EXIT'), 'EXIT');
  t.is((exit as ExitMessage).from, child.id);
});

test('a child whose init throws: spawn rejects with init_failed and the reason, and a linked parent sees the exit', async (t) => {
  const parent = await system.spawn(probe, { trap: true });
  const outcome = await system.call<{ code: string; reason: unknown }>(parent, { op: 'spawn', module: probeUrl, args: { failInit: true }, link: true });
  t.is(outcome.code, 'init_failed');
  t.like(outcome.reason, { error: { message: 'init refused' } });
  const exit = await eventually(async () => (await infos(parent.id)).find((m) => m.type === 'EXIT'), 'EXIT');
  t.like(exit, { reason: { error: { message: 'init refused' } } });
  const fromMain = await t.throwsAsync(system.spawn(probe, { failInit: true }));
  t.like(fromMain, { code: 'init_failed' });
});

test('spawn_monitor: the spawner gets DOWN with the ref returned by spawn', async (t) => {
  const parent = await system.spawn(probe, {});
  const child = await system.call<{ id: string; monitorRef: string }>(parent, { op: 'spawn', module: probeUrl, args: {}, monitor: true });
  t.is(typeof child.monitorRef, 'string');
  system.kill(child.id);
  const down = await eventually(async () => (await infos(parent.id)).find((m) => m.type === 'DOWN'), 'DOWN');
  t.deepEqual(down, { type: 'DOWN', ref: child.monitorRef, id: child.id, reason: 'killed' });
});
