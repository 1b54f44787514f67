// Retention's cost to the drain, run by `npx tsx bench/retention.ts`:
// the no-op drain (addMany / acceptMany(500) / completeMany) of N jobs on a
// store holding F finished jobs, first alone, then while a pruner removes
// all F of them (pruneFinished in batches of 500, one transaction each, one
// after the other, as the app's pruner does). Target: the drain while
// pruning keeps >= 90% of its rate alone. F is 50,000 by default
// (RETENTION_BENCH_FINISHED=1000000 for the figure), N 20,000
// (RETENTION_BENCH_DRAIN). The cost of the finish index itself (written by
// every finish, retention on or off) is measured by `bench/jobs.ts --drain`
// against a checkout without it (`--core`).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJobs } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';
import { formatTable } from './table.js';

const FINISHED = Number(process.env.RETENTION_BENCH_FINISHED ?? 50_000);
const DRAIN = Number(process.env.RETENTION_BENCH_DRAIN ?? 20_000);
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
    // Warm-up, then the drain alone.
    await drain(jobs, TYPE, 'w', 2_000);
    const alone = await drain(jobs, TYPE, 'a', DRAIN);
    // The same drain while every finished job of the other type is pruned.
    let pruning = true;
    let removed = 0;
    let batches = 0;
    const pruner = (async () => {
      while (pruning) {
        const result = await jobs.pruneFinished(OLD, 'succeeded', { maxCount: 0 });
        removed += result.removed;
        batches += 1;
        if (!result.more) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const pruneStart = performance.now();
    const during = await drain(jobs, TYPE, 'p', DRAIN);
    const drainEnd = performance.now();
    await pruner;
    const pruneSeconds = (performance.now() - pruneStart) / 1000;
    pruning = false;
    console.log(
      formatTable(
        ['retention', 'jobs', 'jobs/s', 'x alone'],
        [
          ['drain alone', DRAIN, alone, 1],
          [`drain while pruning ${FINISHED} finished jobs`, DRAIN, during, during / alone],
        ],
      ),
    );
    console.log(
      `pruned ${removed} of ${FINISHED} finished jobs in ${batches} transactions, ${pruneSeconds.toFixed(2)} s (${(removed / pruneSeconds).toFixed(0)}/s); the drain took ${((drainEnd - pruneStart) / 1000).toFixed(2)} s of it; target: drain while pruning >= 0.90 x alone`,
    );
  } finally {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
