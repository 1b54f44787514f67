
import { actorStart, startSupervisor, supervisorChild } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import remoteCaller, { type RemoteAnswer } from './fixtures/remote-caller.js';
import { code, running } from './fixtures/outcomes.js';
import { test } from './fixtures/shared-system.js';
import worker from './fixtures/worker.js';

test('getChildspec answers a static child spec with its defaults filled in, kept while the child is terminated', async (t) => {
  const { system } = t.context;
  const a = pooled('a');
  const b = pooled('b', {}, { restart: 'transient', shutdown: 'brutal_kill' });
  const inner = supervisorChild('inner', { strategy: 'one_for_one', children: [] });
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [a, b, inner] });

  const specA = await sup.getChildspec('a');
  t.deepEqual(
    { ...specA, start: undefined },
    { id: 'a', start: undefined, restart: 'permanent', shutdown: 5000, type: 'worker', significant: false },
  );
  t.is(specA.start, a.start, 'the start the spec was given, actor definition and all');
  t.like(await sup.getChildspec('b'), { id: 'b', restart: 'transient', shutdown: 'brutal_kill', significant: false });
  t.like(await sup.getChildspec('inner'), { id: 'inner', type: 'supervisor', shutdown: 'infinity', restart: 'permanent' });

  await sup.terminateChild('a');
  t.deepEqual(await sup.getChildspec('a'), specA);
});

test('getChildspec answers not_found for an unknown id, and for an ActorRef on a one_for_one supervisor as OTP does for a pid', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a')] });
  const a = running(await sup.whichChild('a'));
  t.is(await code(sup.getChildspec('nope')), 'not_found');
  t.is(await code(sup.getChildspec(a)), 'not_found');
  await sup.terminateChild('a');
  await sup.deleteChild('a');
  t.is(await code(sup.getChildspec('a')), 'not_found');
});

test('getChildspec on simple_one_for_one answers the template by its id, and by a child ActorRef the template with that child args', async (t) => {
  const { system } = t.context;
  const template = dedicated('job', { label: 'template' });
  const sup = await startSupervisor(system, { strategy: 'simple_one_for_one', children: [template] });
  const child = await sup.startChild({ label: 'one' });
  if (child === undefined) throw new Error('no child');

  const byTemplate = await sup.getChildspec('job');
  t.like(byTemplate, { id: 'job', restart: 'permanent', shutdown: 5000, type: 'worker', significant: false });
  t.is(byTemplate.start, template.start);

  const byChild = await sup.getChildspec(child);
  t.like(byChild, { id: 'job', restart: 'permanent', shutdown: 5000, type: 'worker', significant: false });
  t.like(byChild.start, { actor: worker, args: { label: 'one' }, options: { placement: 'dedicated' } });
  t.like(await sup.getChildspec(child.id), { start: { args: { label: 'one' } } }, 'an ActorId string finds it too');

  await sup.terminateChild(child);
  t.is(await code(sup.getChildspec(child)), 'not_found');
});

test('whichChild answers one static child by spec id or by the ActorRef it runs as, and not_found otherwise', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('a'), pooled('b', {}, { restart: 'transient' })],
  });
  const [lineA, lineB] = await sup.whichChildren();
  t.deepEqual(await sup.whichChild('a'), lineA);
  t.deepEqual(await sup.whichChild('b'), lineB);
  if (lineB === undefined) throw new Error('no b');
  t.deepEqual(await sup.whichChild(running(lineB)), lineB);

  await sup.terminateChild('b');
  t.deepEqual(await sup.whichChild('b'), { id: 'b', actor: undefined, type: 'worker', restart: 'transient' });
  t.is(await code(sup.whichChild(running(lineB))), 'not_found', 'the ended process is no child any more');
  t.is(await code(sup.whichChild('c')), 'not_found');
});

test('whichChild on simple_one_for_one takes a child ActorRef; the template id answers simple_one_for_one', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'simple_one_for_one',
    children: [{ id: 'job', start: actorStart(worker, {}), restart: 'temporary' }],
  });
  const one = await sup.startChild({ label: 'one' });
  const two = await sup.startChild({ label: 'two' });
  if (one === undefined || two === undefined) throw new Error('no children');
  t.deepEqual(await sup.whichChild(two), { id: 'job', actor: two.id, type: 'worker', restart: 'temporary' });
  t.deepEqual(await sup.whichChild(one.id), { id: 'job', actor: one.id, type: 'worker', restart: 'temporary' });
  t.is(await code(sup.whichChild('job')), 'simple_one_for_one');
  await sup.terminateChild(one);
  t.is(await code(sup.whichChild(one)), 'not_found');
});

test('from another thread whichChild answers, and getChildspec of a spec holding an actor definition fails instead of hanging', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a')] });
  const caller = await system.spawn(remoteCaller, undefined);
  const ask = (type: 'which_child' | 'get_childspec', id: string): Promise<RemoteAnswer> =>
    system.call<RemoteAnswer, { type: typeof type; supervisor: string; id: string }>(caller, { type, supervisor: sup.ref.id, id });

  t.deepEqual(await ask('which_child', 'a'), { ok: true, value: await sup.whichChild('a') });
  t.deepEqual(await ask('which_child', 'b'), { ok: false, code: 'not_found' });
  // The reply cannot be copied to the caller's thread: the call fails (the handle reports noproc).
  t.deepEqual(await ask('get_childspec', 'a'), { ok: false, code: 'noproc' });
  t.is(await system.call(running(await sup.whichChild('a')), { type: 'ping' }), 'pong', 'the supervisor is unharmed');
});
