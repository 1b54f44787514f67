import { setTimeout as sleep } from 'node:timers/promises';
import { type ChildInfo, Supervisor, startSupervisor, supervisorChild } from '@jobtree/supervisor';
import test from 'ava';
import { RestartIntensity } from '../../packages/supervisor/src/restart-intensity.js';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, record } from './fixtures/next-event.js';
import { test as systemTest } from './fixtures/system.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

test('the restart window allows `intensity` restarts within `period` and counts only recent ones', (t) => {
  let now = 0;
  const window = new RestartIntensity(3, 10_000, () => now);
  t.true(window.add());
  now = 4000;
  t.true(window.add());
  now = 8000;
  t.true(window.add());
  now = 9999;
  t.false(window.add(), 'a 4th restart within 10 s is one too many');

  const sliding = new RestartIntensity(1, 1000, () => now);
  now = 0;
  t.true(sliding.add());
  now = 1000;
  t.true(sliding.add(), 'the first restart left the window');
  t.is(sliding.count, 1);
  t.false(new RestartIntensity(0, 1000, () => 0).add(), 'intensity 0: no restart at all');
});

systemTest(
  'a kill loop reaches intensity 3 within the period: the supervisor stops its children and exits `shutdown`, which its parent sees',
  async (t) => {
    const { system } = t.context;
    // Each restart of the dedicated looper starts a thread (about a CPU
    // second, many on a loaded machine): the period outlasts three of them.
    const inner = supervisorChild(
      'inner',
      { strategy: 'one_for_one', intensity: 3, period: 60_000, children: [pooled('bystander'), dedicated('looper')] },
      { restart: 'transient' },
    );
    const outer = await startSupervisor(system, { strategy: 'one_for_one', children: [inner] });
    const innerId = actorOf(await outer.whichChildren(), 'inner');
    const sup = new Supervisor(system, innerId, inner.events);
    const bystander = actorOf(await sup.whichChildren(), 'bystander');
    const bystanderDown = system.monitor({ id: bystander });
    const innerDown = system.monitor({ id: innerId });
    const outerExit = nextEvent(outer.events, 'child_exited');
    // Awaited last: when an earlier step fails, its own timeout must not surface as an unhandled rejection besides.
    outerExit.catch(() => {});
    const restarts = record(sup.events, 'child_restarted');

    for (let kill = 1; kill <= 3; kill += 1) {
      const restarted = nextEvent(sup.events, 'child_restarted');
      system.kill({ id: actorOf(await sup.whichChildren(), 'looper') });
      t.is((await restarted).id, 'looper');
    }
    const reached = nextEvent(sup.events, 'intensity_reached');
    system.kill({ id: actorOf(await sup.whichChildren(), 'looper') });

    t.deepEqual(await reached, { restarts: 4, intensity: 3, period: 60_000 });
    t.is(restarts.length, 3);
    t.is(await bystanderDown, 'shutdown', 'the other children are terminated');
    t.is(await innerDown, 'shutdown');
    t.like(await outerExit, { id: 'inner', actor: innerId, reason: 'shutdown', terminated: false });
    // Transient and exited `shutdown`: the parent keeps the spec without a process.
    t.deepEqual(await outer.whichChildren(), [{ id: 'inner', actor: undefined, type: 'supervisor', restart: 'transient' }]);
  },
);

systemTest('restarts that fall out of the period do not add up', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    intensity: 1,
    period: 300,
    children: [pooled('w')],
  });
  const escalations = record(sup.events, 'intensity_reached');
  for (let kill = 1; kill <= 3; kill += 1) {
    const restarted = nextEvent(sup.events, 'child_restarted');
    system.kill({ id: actorOf(await sup.whichChildren(), 'w') });
    await restarted;
    // The passing of time is what this test is about: let the last restart leave the window.
    await sleep(400);
  }
  t.deepEqual(escalations, []);
  t.is(typeof actorOf(await sup.whichChildren(), 'w'), 'string');
});

systemTest('a top-level supervisor that reaches its intensity exits `shutdown`', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('w')] });
  const down = system.monitor(sup.ref);
  const restarted = nextEvent(sup.events, 'child_restarted');
  system.kill({ id: actorOf(await sup.whichChildren(), 'w') });
  await restarted;
  const reached = nextEvent(sup.events, 'intensity_reached');
  system.kill({ id: actorOf(await sup.whichChildren(), 'w') });
  t.deepEqual(await reached, { restarts: 2, intensity: 1, period: 5000 });
  t.is(await down, 'shutdown');
});
