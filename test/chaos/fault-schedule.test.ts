// The chaos run's schedule of faults is a function of its seed: a seed
// replays the same faults at the same moments against the same targets.

import test from 'ava';
import { makeSchedule, ROOT_FAULTS, systemTargets } from './fault-schedule.js';
import { Prng } from './prng.js';

const sizes = { faults: 500, everyMs: 150, workerActors: 4, mainWorkers: 2, processors: true, types: ['a', 'b'], rootGapMs: 4_000 };

test('the same seed gives the same schedule, another seed another one', (t) => {
  t.deepEqual(makeSchedule({ seed: 42, ...sizes }), makeSchedule({ seed: 42, ...sizes }));
  t.notDeepEqual(makeSchedule({ seed: 42, ...sizes }), makeSchedule({ seed: 43, ...sizes }));
});

test('faults that restart a child of the root are spaced by the gap, so the root never gives up', (t) => {
  const roots = makeSchedule({ seed: 7, ...sizes }).filter((fault) => ROOT_FAULTS.has(fault.kind));
  t.true(roots.length > 5);
  for (let i = 1; i < roots.length; i++) t.true(roots[i]!.atMs - roots[i - 1]!.atMs >= sizes.rootGapMs);
});

test('system actors are killed in a rotation: every kind is hit before any is hit twice', (t) => {
  const kills = makeSchedule({ seed: 9, ...sizes, faults: 3_000 }).filter((fault) => fault.kind === 'kill_system');
  const targets = systemTargets(sizes.types);
  t.true(kills.length >= targets.length);
  t.deepEqual(kills.slice(0, targets.length).map((fault) => fault.target).sort(), [...targets].sort());
  t.true(['core', 'user_sup', 'activity_monitor_sup', 'notifier_sup', 'jobs_server', 'notifier:a', 'type_monitor:b', 'activity_monitor:a'].every((name) => targets.includes(name)));
});

test('excluded kinds are never drawn, and without processors no handler fault is', (t) => {
  const kinds = (options: Partial<Parameters<typeof makeSchedule>[0]>) => new Set(makeSchedule({ seed: 3, ...sizes, ...options }).map((fault) => fault.kind));
  t.false(kinds({ exclude: ['stall_handler', 'kill_system'] }).has('stall_handler'));
  t.false(kinds({ exclude: ['stall_handler', 'kill_system'] }).has('kill_system'));
  const without = kinds({ processors: false });
  t.false(without.has('stall_handler') || without.has('crash_handler') || without.has('kill_processor'));
});

test('every kind of fault is drawn, and targets stay within the run', (t) => {
  const schedule = makeSchedule({ seed: 11, ...sizes });
  t.deepEqual([...new Set(schedule.map((fault) => fault.kind))].sort(), ['crash_main_worker', 'kill_system', 'kill_worker_actor', 'crash_handler', 'kill_processor', 'stall_handler', 'stall_thread', 'storage_conflict', 'storage_too_old', 'storage_unknown_result'].sort());
  for (const fault of schedule) {
    if (fault.kind === 'kill_worker_actor' || fault.kind === 'stall_thread') t.true(Number(fault.target) < sizes.workerActors);
    if (fault.kind === 'crash_main_worker') t.true(Number(fault.target) < sizes.mainWorkers);
  }
});

test('the generator is seeded: same seed, same numbers; forks are independent streams', (t) => {
  const draw = (prng: Prng) => Array.from({ length: 5 }, () => prng.int(1_000_000));
  t.deepEqual(draw(new Prng(5)), draw(new Prng(5)));
  t.notDeepEqual(draw(new Prng(5).fork('a')), draw(new Prng(5).fork('b')));
  const parent = new Prng(5);
  const fork = parent.fork('x');
  parent.next();
  t.deepEqual(draw(fork), draw(new Prng(5).fork('x')));
});
