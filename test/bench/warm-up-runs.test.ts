import test from 'ava';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencySampleId } from '../../bench/peers/bench-system.js';
import type { BenchSystem, DrainResult } from '../../bench/peers/bench-system.js';
import { scenarios, warmUpRuns } from '../../bench/peers/scenarios.js';

function drainingSystem(): BenchSystem & { drains: [number, number][] } {
  const drains: [number, number][] = [];
  return {
    drains,
    label: 'fake',
    key: 'fake',
    durability: 'none',
    async drain(count: number, workers: number): Promise<DrainResult> {
      drains.push([count, workers]);
      return { jobs: count, seconds: 1, perSecond: count, cpuSeconds: 0 };
    },
    async close() {},
  };
}

test('a process warms up with a quarter of the first drain at each handler count the drains use, in their order', async (t) => {
  const system = drainingSystem();
  const warmUps = warmUpRuns(system, scenarios(1));
  for (const warmUp of warmUps) await warmUp.run();
  t.deepEqual(system.drains, [
    [5_000, 1],
    [5_000, 8],
    [5_000, 50],
  ]);
  t.deepEqual(
    warmUps.map((warmUp) => warmUp.what),
    ['warm-up drain 5,000 @ 1, not measured', 'warm-up drain 5,000 @ 8, not measured', 'warm-up drain 5,000 @ 50, not measured'],
  );
});

test('the warm-ups follow the drains that run, and scale with the job counts', async (t) => {
  const system = drainingSystem();
  const only8 = scenarios(0.2).filter((scenario) => scenario.kind !== 'drain' || scenario.workers === 8);
  for (const warmUp of warmUpRuns(system, only8)) await warmUp.run();
  t.deepEqual(system.drains, [[1_000, 8]]);
  const system50 = drainingSystem();
  const only50 = scenarios(1).filter((scenario) => scenario.kind !== 'drain' || scenario.workers === 50);
  for (const warmUp of warmUpRuns(system50, only50)) await warmUp.run();
  t.deepEqual(system50.drains, [[5_000, 50]], 'one warm-up at 50 handlers, a quarter of the first drain there (20,000, not the 100,000 after it)');
});

test('no warm-up without a drain to run or a system that drains', (t) => {
  const noDrains = scenarios(1).filter((scenario) => scenario.kind !== 'drain');
  t.deepEqual(warmUpRuns(drainingSystem(), noDrains), []);
  const { drain: _drain, ...withoutDrain } = drainingSystem();
  t.deepEqual(warmUpRuns(withoutDrain, scenarios(1)), []);
});

test('a latency run leaves its warm-up adds out and measures the rest in order', (t) => {
  const ids = Array.from({ length: LATENCY_WARM_UP_SAMPLES + 3 }, (_, i) => latencySampleId(i));
  t.deepEqual(ids.filter(isMeasuredSample), ['l0', 'l1', 'l2']);
  t.is(ids.filter((id) => !isMeasuredSample(id)).length, LATENCY_WARM_UP_SAMPLES);
  t.is(new Set(ids).size, ids.length);
});
