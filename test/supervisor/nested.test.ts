import { type ChildInfo, Supervisor, startSupervisor, supervisorChild } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, nextEvents, record } from './fixtures/next-event.js';
import { test } from './fixtures/shared-system.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

test("a child supervisor's intensity escalation makes its parent restart it, with fresh children", async (t) => {
  const { system } = t.context;
  const inner = supervisorChild(
    'inner',
    { strategy: 'one_for_one', intensity: 0, children: [pooled('w')] },
    { name: 'inner_sup' },
  );
  const outer = await startSupervisor(system, {
    strategy: 'one_for_one',
    intensity: 3,
    children: [pooled('sibling'), inner],
  });
  const before = await outer.whichChildren();
  t.deepEqual(
    before.map((child) => [child.id, child.type]),
    [
      ['sibling', 'worker'],
      ['inner', 'supervisor'],
    ],
  );
  t.deepEqual(await outer.countChildren(), { specs: 2, active: 2, supervisors: 1, workers: 1 });
  t.is(system.whereis('inner_sup'), actorOf(before, 'inner'));
  const innerSup = new Supervisor(system, actorOf(before, 'inner'), inner.events);
  const oldWorker = actorOf(await innerSup.whichChildren(), 'w');

  const reached = nextEvent(inner.events, 'intensity_reached');
  const innerRestarted = nextEvent(outer.events, 'child_restarted');
  const newWorkerStarted = nextEvent(inner.events, 'child_started');
  system.kill({ id: oldWorker });

  t.deepEqual(await reached, { restarts: 1, intensity: 0, period: 5000 });
  const restart = await innerRestarted;
  t.is(restart.id, 'inner');
  t.is(restart.previous, actorOf(before, 'inner'));
  const started = await newWorkerStarted;
  const after = await outer.whichChildren();
  t.is(actorOf(after, 'sibling'), actorOf(before, 'sibling'), 'one_for_one: the sibling is untouched');
  t.is(actorOf(after, 'inner'), restart.actor);
  t.is(system.whereis('inner_sup'), restart.actor, 'the name moved to the new instance');
  const restartedInner = new Supervisor(system, restart.actor, inner.events);
  const worker = actorOf(await restartedInner.whichChildren(), 'w');
  t.is(worker, started.actor);
  t.not(worker, oldWorker);
  t.is(await system.call({ id: worker }, { type: 'ping' }), 'pong');
});

test('stopping the parent stops the nested supervisor, which stops its own children first', async (t) => {
  const { system } = t.context;
  const inner = supervisorChild('inner', { strategy: 'one_for_one', children: [pooled('x'), dedicated('y')] });
  const outer = await startSupervisor(system, { strategy: 'rest_for_one', children: [pooled('first'), inner, pooled('last')] });
  const outerChildren = await outer.whichChildren();
  const innerSup = new Supervisor(system, actorOf(outerChildren, 'inner'), inner.events);
  const innerChildren = await innerSup.whichChildren();
  const outerExits = record(outer.events, 'child_exited');
  const innerExits = nextEvents(inner.events, 'child_exited', 2);

  await outer.stop();
  t.deepEqual(
    (await innerExits).map((event) => [event.id, event.reason]),
    [
      ['y', 'shutdown'],
      ['x', 'shutdown'],
    ],
  );
  t.deepEqual(
    outerExits.map((event) => [event.id, event.reason]),
    [
      ['last', 'shutdown'],
      ['inner', 'shutdown'],
      ['first', 'shutdown'],
    ],
  );
  for (const child of [...innerChildren, ...outerChildren]) {
    t.is(await system.monitor({ id: child.actor as string }), 'noproc', `${child.id} is gone`);
  }
});

test('a nested supervisor that fails to start fails its parent with start_failed naming the child', async (t) => {
  const { system } = t.context;
  const inner = supervisorChild('inner', {
    strategy: 'one_for_one',
    children: [pooled('ok'), pooled('bad', { failInit: 'inner init failed' })],
  });
  const events = record(inner.events, 'child_exited');
  const error = await t.throwsAsync(startSupervisor(system, { strategy: 'one_for_one', children: [inner] }));
  t.like(error, { code: 'start_failed', childId: 'inner' });
  t.like(error, { reason: { error: { name: 'SupervisorError', code: 'start_failed' } } });
  t.regex(error?.message ?? '', /child 'bad' failed to start/);
  t.deepEqual(
    events.map((event) => [event.id, event.reason]),
    [['ok', 'shutdown']],
    'the inner supervisor rolled back its started child',
  );
});
