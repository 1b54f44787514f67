import test from 'ava';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencySampleId } from '../../bench/peers/bench-system.js';
import type { BenchSystem, DrainResult } from '../../bench/peers/bench-system.js';
import { scenarios, warmUpRun } from '../../bench/peers/scenarios.js';

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

test('a process warms up with a quarter of its first drain, at that drain handler count', async (t) => {
  const system = drainingSystem();
  const warmUp = warmUpRun(system, scenarios(1));
  t.truthy(warmUp);
  await warmUp?.run();
  t.deepEqual(system.drains, [[5_000, 1]]);
  t.regex(warmUp?.what ?? '', /5,000 @ 1, not measured/);
});

test('the warm-up follows the first drain that runs, and scales with the job counts', async (t) => {
  const system = drainingSystem();
  const only8 = scenarios(0.2).filter((scenario) => scenario.kind !== 'drain' || scenario.workers === 8);
  await warmUpRun(system, only8)?.run();
  t.deepEqual(system.drains, [[1_000, 8]]);
});

test('no warm-up without a drain to run or a system that drains', (t) => {
  const noDrains = scenarios(1).filter((scenario) => scenario.kind !== 'drain');
  t.is(warmUpRun(drainingSystem(), noDrains), undefined);
  const { drain: _drain, ...withoutDrain } = drainingSystem();
  t.is(warmUpRun(withoutDrain, scenarios(1)), undefined);
});

test('a latency run leaves its warm-up adds out and measures the rest in order', (t) => {
  const ids = Array.from({ length: LATENCY_WARM_UP_SAMPLES + 3 }, (_, i) => latencySampleId(i));
  t.deepEqual(ids.filter(isMeasuredSample), ['l0', 'l1', 'l2']);
  t.is(ids.filter((id) => !isMeasuredSample(id)).length, LATENCY_WARM_UP_SAMPLES);
  t.is(new Set(ids).size, ids.length);
});
