import type { ActorSystem, ExitReason } from '@jobtree/actors';
import { type ChildInfo, type Strategy, startSupervisor } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, nextEvents, record } from './fixtures/next-event.js';
import { test } from './fixtures/system.js';
import type { WorkerMessage } from './fixtures/worker.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

function exitWith(system: ActorSystem, actor: string, reason: ExitReason): void {
  system.cast<WorkerMessage>({ id: actor }, { type: 'exit', reason });
}

test('a transient child is restarted after an abnormal exit only', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    intensity: 5,
    children: [
      pooled('normal', {}, { restart: 'transient' }),
      pooled('shutdown', {}, { restart: 'transient' }),
      pooled('shutdown-detail', {}, { restart: 'transient' }),
      pooled('crashed', {}, { restart: 'transient' }),
      dedicated('killed', {}, { restart: 'transient' }),
    ],
  });
  const before = await sup.whichChildren();
  const restarts = record(sup.events, 'child_restarted');
  const exited = nextEvents(sup.events, 'child_exited', 5);
  exitWith(system, actorOf(before, 'normal'), 'normal');
  exitWith(system, actorOf(before, 'shutdown'), 'shutdown');
  exitWith(system, actorOf(before, 'shutdown-detail'), { shutdown: 'done' });
  system.cast<WorkerMessage>({ id: actorOf(before, 'crashed') }, { type: 'crash', message: 'boom' });
  system.kill({ id: actorOf(before, 'killed') });
  await exited;

  // The call is queued behind the exits, so every restart decision has been made.
  const after = await sup.whichChildren();
  t.deepEqual(
    after.map((child) => [child.id, child.actor === undefined]),
    [
      ['normal', true],
      ['shutdown', true],
      ['shutdown-detail', true],
      ['crashed', false],
      ['killed', false],
    ],
  );
  t.deepEqual(restarts.map((event) => event.id).sort(), ['crashed', 'killed']);
  t.deepEqual(await sup.countChildren(), { specs: 5, active: 2, supervisors: 0, workers: 5 });
});

test('a permanent child is restarted even after a normal exit', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('p')] });
  const before = await sup.whichChildren();
  const restarted = nextEvent(sup.events, 'child_restarted');
  exitWith(system, actorOf(before, 'p'), 'normal');
  const restart = await restarted;
  t.is(restart.previous, actorOf(before, 'p'));
  t.is(actorOf(await sup.whichChildren(), 'p'), restart.actor);
});

test('a temporary child is never restarted and its spec is dropped when it ends', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('keeper'), pooled('once', {}, { restart: 'temporary' })],
  });
  const before = await sup.whichChildren();
  const restarts = record(sup.events, 'child_restarted');
  const exited = nextEvent(sup.events, 'child_exited');
  system.cast<WorkerMessage>({ id: actorOf(before, 'once') }, { type: 'crash', message: 'boom' });
  t.like(await exited, { id: 'once', terminated: false, reason: { error: { message: 'boom' } } });
  const after = await sup.whichChildren();
  t.deepEqual(
    after.map((child) => child.id),
    ['keeper'],
  );
  t.is(actorOf(after, 'keeper'), actorOf(before, 'keeper'));
  t.deepEqual(restarts, []);
});

for (const strategy of ['one_for_all', 'rest_for_one'] satisfies Strategy[]) {
  test(`${strategy}: a temporary sibling is terminated and dropped, not restarted, in a restart cascade`, async (t) => {
    const { system } = t.context;
    const sup = await startSupervisor(system, {
      strategy,
      children: [pooled('a'), pooled('b'), pooled('temp', {}, { restart: 'temporary' }), dedicated('c')],
    });
    const before = await sup.whichChildren();
    const tempDown = system.monitor({ id: actorOf(before, 'temp') });
    const exits = record(sup.events, 'child_exited');
    const restarted = nextEvents(sup.events, 'child_restarted', strategy === 'one_for_all' ? 3 : 2);
    system.cast<WorkerMessage>({ id: actorOf(before, 'b') }, { type: 'crash', message: 'boom' });

    const restarts = await restarted;
    t.deepEqual(
      restarts.map((event) => event.id),
      strategy === 'one_for_all' ? ['a', 'b', 'c'] : ['b', 'c'],
    );
    t.is(await tempDown, 'shutdown');
    t.like(
      exits.find((event) => event.id === 'temp'),
      { terminated: true, reason: 'shutdown' },
    );
    const after = await sup.whichChildren();
    t.deepEqual(
      after.map((child) => child.id),
      ['a', 'b', 'c'],
    );
    t.true(after.every((child) => typeof child.actor === 'string' && child.actor !== 'restarting'));
  });
}
