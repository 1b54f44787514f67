// Benchmark of fair turns across groups, run by `pnpm bench:groups`.
//
// 1,000 tenants (`--tenants`): one with a backlog of 100,000 jobs (`--jobs`)
// and every other with one job, added after the backlog; group concurrency
// 1; 8 handlers (`--handlers`), each taking one job at a time (waiting when
// none may start) and finishing it at once. Reports at which start the last
// single-job tenant started (target: within the first 1,000 starts, the
// number of tenants), and the drain rate against the same jobs drained with
// no groups and no limits in the same run, on a fresh store each (ratio).
// Group concurrency 1 runs the backlog's jobs one at a time once the other
// tenants are served, so the drain is also measured with groups and no
// limits: the cost of the turns themselves.
//
//   pnpm bench:groups                     the target's size
//   pnpm bench:groups --jobs 10000        a smaller backlog

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { badOption, benchOptions, positiveInteger } from './bench-options.js';

const USAGE = `usage: pnpm bench:groups [--jobs N] [--tenants N] [--handlers N]
  --jobs N         the big tenant's backlog (default 100000)
  --tenants N      tenants, the big one included (default 1000; at least 2)
  --handlers N     concurrent handlers (default 8)`;
const args = benchOptions(USAGE, {
  jobs: { type: 'string', default: '100000' },
  tenants: { type: 'string', default: '1000' },
  handlers: { type: 'string', default: '8' },
});
const backlog = positiveInteger(USAGE, '--jobs', args.jobs);
const tenants = positiveInteger(USAGE, '--tenants', args.tenants);
if (tenants < 2) badOption(USAGE, `--tenants must be at least 2 (the big tenant and one other), got ${args.tenants}`);
const handlers = positiveInteger(USAGE, '--handlers', args.handlers);
const TYPE = 'bench';
const total = backlog + tenants - 1;

async function withStore<T>(body: (jobs: Jobs) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-groups-'));
  const database = await openDatabase({ path: dir });
  const jobs = await openJobs({ database });
  try {
    await jobs.setTypeTimeout(TYPE, 600);
    return await body(jobs);
  } finally {
    await jobs.close();
    await database.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The backlog (tenant 0), then one job for each other tenant; `grouped` false adds the same jobs without groups. */
async function addJobs(jobs: Jobs, grouped: boolean): Promise<void> {
  for (let start = 0; start < backlog; start += 1_000) {
    const size = Math.min(1_000, backlog - start);
    await jobs.addMany(
      TYPE,
      Array.from({ length: size }, (_, i) => ({ id: `big-${start + i}`, ...(grouped ? { group: 'tenant-0' } : {}) })),
    );
  }
  for (let start = 1; start < tenants; start += 1_000) {
    const size = Math.min(1_000, tenants - start);
    await jobs.addMany(
      TYPE,
      Array.from({ length: size }, (_, i) => ({ id: `single-${start + i}`, ...(grouped ? { group: `tenant-${start + i}` } : {}) })),
    );
  }
}

interface Drain {
  seconds: number;
  /** The start (from 1) by which every single-job tenant had started. */
  lastSingleStart: number;
}

/** `handlers` handlers take one job at a time and finish it at once, until every job has run. */
async function drain(jobs: Jobs): Promise<Drain> {
  let starts = 0;
  let finished = 0;
  let singlesLeft = tenants - 1;
  let lastSingleStart = 0;
  const done = new AbortController();
  const began = performance.now();
  const handler = async () => {
    while (finished < total) {
      const job: Job | undefined = await jobs.accept(TYPE, { timeout: 60_000, signal: done.signal });
      if (job === undefined) continue;
      starts += 1;
      if (job.id.startsWith('single-')) {
        singlesLeft -= 1;
        if (singlesLeft === 0) lastSingleStart = starts;
      }
      await jobs.finish(job);
      finished += 1;
      if (finished === total) done.abort();
    }
  };
  await Promise.all(Array.from({ length: handlers }, handler));
  return { seconds: (performance.now() - began) / 1_000, lastSingleStart };
}

async function run(grouped: boolean, limited: boolean): Promise<Drain> {
  return withStore(async (jobs) => {
    if (limited) await jobs.setTypeLimits(TYPE, { group: { concurrency: 1 } });
    await addJobs(jobs, grouped);
    return drain(jobs);
  });
}

console.log(`${tenants} tenants: one with ${backlog} jobs, ${tenants - 1} with one job each; ${handlers} handlers`);
const report = (name: string, drained: Drain) =>
  console.log(`  ${name.padEnd(28)} ${total} jobs in ${drained.seconds.toFixed(1)} s, ${(total / drained.seconds).toFixed(0)} jobs/s`);
const plain = await run(false, false);
report('no groups:', plain);
const turns = await run(true, false);
report('groups, no limits:', turns);
const grouped = await run(true, true);
report('groups, concurrency 1 each:', grouped);
console.log(`  the last single-job tenant started at start ${grouped.lastSingleStart} (target: within the first ${tenants})`);
console.log(`    (with groups and no limits: at start ${turns.lastSingleStart}; with no groups: at start ${plain.lastSingleStart})`);
console.log(`  drain rate with groups / without: ${(plain.seconds / turns.seconds).toFixed(2)} with no limits, ${(plain.seconds / grouped.seconds).toFixed(2)} with concurrency 1 each`);
