import { type ChildInfo, startSupervisor } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, nextEvents } from './fixtures/next-event.js';
import { test } from './fixtures/system.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

test('a child that ignores the shutdown signal is killed when its shutdown timeout runs out', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('defiant', { ignoreShutdown: true }, { shutdown: 300 }), pooled('polite', {}, { shutdown: 300 })],
  });
  const children = await sup.whichChildren();
  const defiantDown = system.monitor({ id: actorOf(children, 'defiant') });
  const exited = nextEvent(sup.events, 'child_exited');
  const began = performance.now();
  await sup.terminateChild('defiant');
  const waited = performance.now() - began;

  t.is(await defiantDown, 'killed');
  t.like(await exited, { id: 'defiant', reason: 'killed', terminated: true });
  t.true(waited >= 290, `the supervisor gave it its 300 ms first (waited ${waited.toFixed(0)} ms)`);

  const politeExited = nextEvent(sup.events, 'child_exited');
  await sup.terminateChild('polite');
  t.like(await politeExited, { id: 'polite', reason: 'shutdown' }, 'a child that obeys ends with `shutdown`');
});

test('brutal_kill kills the child at once, without a shutdown signal', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [
      // Would take 10 s to obey a shutdown signal: only a kill ends it quickly.
      dedicated('slow', { slowShutdownMs: 10_000 }, { shutdown: 'brutal_kill' }),
      pooled('plain', {}, { shutdown: 'brutal_kill' }),
    ],
  });
  const exited = nextEvents(sup.events, 'child_exited', 2);
  await sup.terminateChild('slow');
  await sup.terminateChild('plain');
  t.deepEqual(
    (await exited).map((event) => [event.id, event.reason]),
    [
      ['slow', 'killed'],
      ['plain', 'killed'],
    ],
  );
});

test('shutdown infinity waits for a child that takes its time to stop', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [
      pooled('patient', { slowShutdownMs: 400 }, { shutdown: 'infinity' }),
      pooled('hurried', { slowShutdownMs: 10_000 }, { shutdown: 100 }),
    ],
  });
  const exited = nextEvents(sup.events, 'child_exited', 2);
  await sup.terminateChild('patient');
  await sup.terminateChild('hurried');
  t.deepEqual(
    (await exited).map((event) => [event.id, event.reason]),
    [
      ['patient', { shutdown: 'slow' }],
      ['hurried', 'killed'],
    ],
  );
});

test('stopping a supervisor terminates its children in reverse start order, then the supervisor', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('a'), dedicated('b'), pooled('c', { slowShutdownMs: 100 }), pooled('d', { ignoreShutdown: true }, { shutdown: 100 })],
  });
  const children = await sup.whichChildren();
  const supDown = system.monitor(sup.ref);
  const exited = nextEvents(sup.events, 'child_exited', 4);
  await sup.stop();
  t.deepEqual(
    (await exited).map((event) => [event.id, event.reason]),
    [
      ['d', 'killed'],
      ['c', { shutdown: 'slow' }],
      ['b', 'shutdown'],
      ['a', 'shutdown'],
    ],
  );
  t.is(await supDown, 'shutdown');
  for (const child of children) t.is(await system.monitor({ id: child.actor as string }), 'noproc', `${child.id} is gone`);
});
