import type { ActorSystem } from '@jobtree/actors';
import { type ChildInfo, SupervisorError, startSupervisor } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, nextEvents, record } from './fixtures/next-event.js';
import { test } from './fixtures/system.js';
import type { WorkerMessage } from './fixtures/worker.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

function ping(system: ActorSystem, actor: string): Promise<string> {
  return system.call<string, WorkerMessage>({ id: actor }, { type: 'ping' });
}

function crash(system: ActorSystem, actor: string): void {
  system.cast<WorkerMessage>({ id: actor }, { type: 'crash', message: 'boom' });
}

test('one_for_one restarts only the child that failed', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('a'), dedicated('b'), pooled('c')],
  });
  const before = await sup.whichChildren();
  const exited = nextEvent(sup.events, 'child_exited');
  const restarted = nextEvent(sup.events, 'child_restarted');
  crash(system, actorOf(before, 'b'));

  const exit = await exited;
  t.is(exit.id, 'b');
  t.false(exit.terminated);
  t.like(exit.reason, { error: { message: 'boom' } });
  const restart = await restarted;
  t.is(restart.id, 'b');
  t.is(restart.previous, actorOf(before, 'b'));

  const after = await sup.whichChildren();
  t.deepEqual(
    after.map((child) => child.id),
    ['a', 'b', 'c'],
  );
  t.is(actorOf(after, 'a'), actorOf(before, 'a'));
  t.is(actorOf(after, 'c'), actorOf(before, 'c'));
  t.is(actorOf(after, 'b'), restart.actor);
  t.not(restart.actor, actorOf(before, 'b'));
  t.is(await ping(system, restart.actor), 'pong');
  t.is(system.threadOf(restart.actor) !== system.threadOf(actorOf(after, 'a')), true, 'b is still on a dedicated thread');
});

test('one_for_all terminates the others in reverse start order and restarts all in start order', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_all',
    children: [pooled('a'), pooled('b'), dedicated('c')],
  });
  const before = await sup.whichChildren();
  const terminated = record(sup.events, 'child_exited');
  const restarted = nextEvents(sup.events, 'child_restarted', 3);
  crash(system, actorOf(before, 'b'));

  const restarts = await restarted;
  t.deepEqual(
    restarts.map((event) => event.id),
    ['a', 'b', 'c'],
  );
  t.deepEqual(
    terminated.map((event) => [event.id, event.terminated]),
    [
      ['b', false],
      ['c', true],
      ['a', true],
    ],
  );
  t.like(terminated[0]?.reason, { error: { message: 'boom' } });
  t.is(terminated[1]?.reason, 'shutdown');
  t.is(terminated[2]?.reason, 'shutdown');
  const after = await sup.whichChildren();
  for (const id of ['a', 'b', 'c']) {
    t.not(actorOf(after, id), actorOf(before, id), `${id} has a new process`);
    t.is(await ping(system, actorOf(after, id)), 'pong');
  }
  t.is(await system.monitor({ id: actorOf(before, 'a') }), 'noproc', 'the old a is gone');
});

test('rest_for_one restarts the failed child and every younger sibling in start order, older ones keep running', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'rest_for_one',
    children: [pooled('a'), dedicated('b'), pooled('c'), pooled('d')],
  });
  const before = await sup.whichChildren();
  const exits = record(sup.events, 'child_exited');
  const starts = record(sup.events, 'child_started');
  const restarted = nextEvents(sup.events, 'child_restarted', 3);
  crash(system, actorOf(before, 'b'));

  const restarts = await restarted;
  t.deepEqual(
    restarts.map((event) => event.id),
    ['b', 'c', 'd'],
  );
  t.deepEqual(
    restarts.map((event) => event.previous),
    ['b', 'c', 'd'].map((id) => actorOf(before, id)),
  );
  t.deepEqual(
    starts.map((event) => event.id),
    ['b', 'c', 'd'],
  );
  t.deepEqual(
    exits.map((event) => [event.id, event.terminated]),
    [
      ['b', false],
      ['d', true],
      ['c', true],
    ],
  );
  const after = await sup.whichChildren();
  t.deepEqual(
    after.map((child) => child.id),
    ['a', 'b', 'c', 'd'],
  );
  t.is(actorOf(after, 'a'), actorOf(before, 'a'), 'the older sibling keeps its process');
  for (const id of ['b', 'c', 'd']) t.not(actorOf(after, id), actorOf(before, id));
  for (const id of ['a', 'b', 'c', 'd']) t.is(await ping(system, actorOf(after, id)), 'pong');
});

test('rest_for_one after the youngest child fails restarts only that child', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'rest_for_one',
    children: [pooled('a'), pooled('b')],
  });
  const before = await sup.whichChildren();
  const restarts = record(sup.events, 'child_restarted');
  const restarted = nextEvent(sup.events, 'child_restarted');
  crash(system, actorOf(before, 'b'));
  await restarted;
  const after = await sup.whichChildren();
  t.is(actorOf(after, 'a'), actorOf(before, 'a'));
  t.deepEqual(
    restarts.map((event) => event.id),
    ['b'],
  );
});

test('simple_one_for_one starts children from its template with the args given, and restarts them with those args', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'simple_one_for_one',
    intensity: 5,
    children: [pooled('job', { label: 'template' })],
  });
  t.deepEqual(await sup.whichChildren(), []);
  const first = await sup.startChild({ label: 'first' });
  const second = await sup.startChild({ label: 'second' });
  const third = await sup.startChild();
  if (first === undefined || second === undefined || third === undefined) throw new Error('children did not start');
  t.like(await system.call(first, { type: 'args' }), { label: 'first' });
  t.like(await system.call(second, { type: 'args' }), { label: 'second' });
  t.like(await system.call(third, { type: 'args' }), { label: 'template' }, 'no args: the template args');
  t.deepEqual(await sup.countChildren(), { specs: 1, active: 3, supervisors: 0, workers: 3 });

  const restarted = nextEvent(sup.events, 'child_restarted');
  crash(system, second.id);
  const restart = await restarted;
  t.is(restart.id, 'job');
  t.is(restart.previous, second.id);
  t.like(await system.call({ id: restart.actor }, { type: 'args' }), { label: 'second' });
  const actors = (await sup.whichChildren()).map((child) => child.actor).sort();
  t.deepEqual(actors, [first.id, restart.actor, third.id].sort());
});

test('simple_one_for_one terminateChild takes the child ActorId and forgets the child', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'simple_one_for_one',
    children: [dedicated('job')],
  });
  const kept = await sup.startChild({ label: 'kept' });
  const gone = await sup.startChild({ label: 'gone' });
  if (kept === undefined || gone === undefined) throw new Error('children did not start');
  const down = system.monitor(gone);
  const exited = nextEvent(sup.events, 'child_exited');

  await sup.terminateChild(gone);
  t.is(await down, 'shutdown');
  t.like(await exited, { id: 'job', actor: gone.id, reason: 'shutdown', terminated: true });
  t.deepEqual(
    (await sup.whichChildren()).map((child) => child.actor),
    [kept.id],
  );
  await sup.terminateChild(kept.id);
  t.deepEqual(await sup.countChildren(), { specs: 1, active: 0, supervisors: 0, workers: 0 });

  const byId = await t.throwsAsync(sup.terminateChild('job'), { instanceOf: SupervisorError });
  t.is(byId.code, 'simple_one_for_one');
  const unknown = await t.throwsAsync(sup.terminateChild(gone.id), { instanceOf: SupervisorError });
  t.is(unknown.code, 'not_found');
  const restart = await t.throwsAsync(sup.restartChild('job'), { instanceOf: SupervisorError });
  t.is(restart.code, 'simple_one_for_one');
  const remove = await t.throwsAsync(sup.deleteChild('job'), { instanceOf: SupervisorError });
  t.is(remove.code, 'simple_one_for_one');
});

test('simple_one_for_one stops all its children when it stops', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'simple_one_for_one',
    children: [pooled('job', {}, { shutdown: 300 })],
  });
  const plain = await sup.startChild({});
  const defiant = await sup.startChild({ ignoreShutdown: true });
  if (plain === undefined || defiant === undefined) throw new Error('children did not start');
  const plainDown = system.monitor(plain);
  const defiantDown = system.monitor(defiant);
  await sup.stop();
  t.is(await plainDown, 'shutdown');
  t.is(await defiantDown, 'killed', 'killed when the shared shutdown timer ran out');
  t.is(await system.monitor(sup.ref), 'noproc');
});
