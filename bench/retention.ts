// Retention's cost to the drain, run by `pnpm bench:retention`:
// the no-op drain (addMany / acceptMany(500) / completeMany) of N jobs on a
// store holding F finished jobs, first alone, then while a pruner removes
// them (pruneFinished in batches of 500, one transaction each): once with
// its batches back to back, once paced as the app's pruner is by default
// (retention.maxRemovalsPerSecond; RETENTION_BENCH_RATES=2000,500 tries
// others). The pruner stops when the drain ends. Target: the drain beside
// the paced pruner keeps >= 90% of its rate alone. F is 50,000 by default
// (RETENTION_BENCH_FINISHED=1000000 for the figure), N 20,000
// (RETENTION_BENCH_DRAIN; 60,000 or more on a loaded machine, whose noise
// a short drain does not average out). The cost of the finish log itself (a row per
// write batch, retention on or off) is measured by each checkout's own
// `bench/jobs.ts --drain`, run interleaved with one without it (CPU per
// 10,000 jobs; its `--core`, the older jobs layer on this checkout's
// storage, ends with a record it cannot decode).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJobs } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';
import { DEFAULT_MAX_REMOVALS_PER_SECOND, pruneDelayMs } from '../packages/jobtree/src/app/prune-pace.js';
import { formatTable } from './table.js';

const FINISHED = Number(process.env.RETENTION_BENCH_FINISHED ?? 50_000);
const DRAIN = Number(process.env.RETENTION_BENCH_DRAIN ?? 20_000);
/** Rounds (RETENTION_BENCH_ROUNDS): each prunes what it can of the same F finished jobs, so give F enough for all. */
const ROUNDS = Number(process.env.RETENTION_BENCH_ROUNDS ?? 1);
/** The paces tried (removals a second), RETENTION_BENCH_RATES=1000,500; the default pace by default. */
const RATES = (process.env.RETENTION_BENCH_RATES ?? String(DEFAULT_MAX_REMOVALS_PER_SECOND)).split(',').map(Number);
const TYPE = 'bench';
const OLD = 'old';

/** Adds `count` jobs of `type` (ids from `prefix`) and completes them all; resolves with jobs/s. */
async function drain(jobs: Jobs, type: string, prefix: string, count: number): Promise<number> {
  const started = performance.now();
  for (let at = 0; at < count; at += 1_000) {
    const size = Math.min(1_000, count - at);
    await jobs.addMany(
      type,
      Array.from({ length: size }, (_, index) => ({ id: `${prefix}${at + index}` })),
    );
  }
  let done = 0;
  const loop = async (): Promise<void> => {
    while (done < count) {
      const taken = await jobs.acceptMany(type, 500);
      if (taken.length === 0) break;
      await jobs.completeMany(taken.map((job) => ({ job })));
      done += taken.length;
    }
  };
  await Promise.all([loop(), loop()]);
  return count / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-retention-'));
  const jobs = await openJobs({ path: dir });
  try {
    await jobs.setTypeTimeout(TYPE, 60);
    await jobs.setTypeTimeout(OLD, 60);
    await drain(jobs, OLD, 'f', FINISHED);
    // Warm-up; then the drain alone, beside a paced pruner and beside one
    // running back to back, twice over, each compared with the drain alone
    // of its round (the store and the machine change as the bench goes).
    await drain(jobs, TYPE, 'w', 2_000);
    const rows: (string | number)[][] = [];
    let round = 0;
    for (let repeat = 0; repeat < ROUNDS; repeat++) {
      const alone = await drain(jobs, TYPE, `a${round++}-`, DRAIN);
      rows.push(['drain alone', DRAIN, alone, 1, '', '']);
      for (const rate of [...RATES, Number.POSITIVE_INFINITY]) {
        const label = rate === Number.POSITIVE_INFINITY ? 'back to back' : `paced, ${rate}/s${rate === DEFAULT_MAX_REMOVALS_PER_SECOND ? ' (the default)' : ''}`;
        let pruning = true;
        let removed = 0;
        const pruner = (async () => {
          while (pruning) {
            const started = performance.now();
            const result = await jobs.pruneFinished(OLD, 'succeeded', { maxCount: 0 });
            removed += result.removed;
            if (!result.more) break;
            const delay = pruneDelayMs(result.removed + result.indexed, performance.now() - started, rate);
            await new Promise((resolve) => (delay > 0 ? setTimeout(resolve, delay) : setImmediate(resolve)));
          }
        })();
        const pruneStart = performance.now();
        const during = await drain(jobs, TYPE, `p${round++}-`, DRAIN);
        const seconds = (performance.now() - pruneStart) / 1000;
        pruning = false;
        await pruner;
        rows.push([`drain while pruning ${label}`, DRAIN, during, during / alone, removed, (removed / seconds).toFixed(0)]);
      }
    }
    console.log(formatTable(['retention', 'jobs', 'jobs/s', 'x alone', 'pruned meanwhile', 'pruned/s'], rows));
    console.log(`${FINISHED} finished jobs to prune at the start; target: drain beside the paced pruner >= 0.90 x alone`);
  } finally {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
