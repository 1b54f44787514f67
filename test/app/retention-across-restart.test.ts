// Retention across restarts: jobs finished over ten days (the test's clock
// set back while they finish) by one app are pruned by the next app on the
// same store exactly as each type's policy says, by age and by count, per
// outcome; the app after that, with a few more finished jobs, counts from
// what the previous pruner left and removes exactly the oldest beyond the
// count. Each app's pruner runs one round when it starts (its interval is an
// hour), so what an app prunes is what its start sees.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { type JobsApp, type StartJobsOptions, startJobs } from 'jobtree';
import type { JobOutcome } from '@jobtree/core';
import type { PrunerStats } from '../../packages/jobtree/src/app/pruner.js';
import { eventually } from './fixtures/temp-app.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Its own policy: a day and 3 succeeded, a week of failed (no count), 2 cancelled (no age). */
const REPORTS = 'reports';
/** The default policy: a day of succeeded and cancelled, a week of failed, 10,000 of each. */
const EMAILS = 'emails';
/** Kept for ever. */
const ARCHIVE = 'archive';

const RETENTION: StartJobsOptions['retention'] = {
  types: {
    [REPORTS]: {
      succeeded: { maxAgeSeconds: 86_400, maxCount: 3 },
      failed: { maxAgeSeconds: 7 * 86_400, maxCount: 'forever' },
      cancelled: { maxAgeSeconds: 'forever', maxCount: 2 },
    },
    [ARCHIVE]: false,
  },
  intervalSeconds: 3_600,
};

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-retention-restart-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts an app on `dir` and waits for its pruner's first round, the one it runs at its start. */
async function start(t: ExecutionContext, dir: string): Promise<JobsApp> {
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', retention: RETENTION });
  t.teardown(() => app.close());
  for (const type of [REPORTS, EMAILS, ARCHIVE]) await app.jobs.setTypeTimeout(type, 30);
  await eventually(async () => (await app.system.call<PrunerStats>('pruner', { type: 'stats' })).rounds >= 1, 15_000, 'the first pruner round');
  return app;
}

/** Ends each of `ids` as `outcome`, one after the other, with this thread's clock `agoMs` behind. */
async function endJobs(app: JobsApp, type: string, outcome: JobOutcome, ids: readonly string[], agoMs: number): Promise<void> {
  const realNow = Date.now;
  Date.now = () => realNow() - agoMs;
  try {
    for (const id of ids) {
      await app.jobs.add(type, id, { id });
      if (outcome === 'cancelled') {
        await app.jobs.cancel(type, id);
        continue;
      }
      const job = await app.jobs.accept(type);
      if (job?.id !== id) throw new Error(`accepted ${job?.id}, not ${id}`);
      if (outcome === 'succeeded') await app.jobs.complete(job);
      else await app.jobs.fail(job, new Error('no'));
    }
  } finally {
    Date.now = realNow;
  }
}

/** Per outcome, jobs `${letter}${age}-${n}` ended that long ago, oldest first. */
async function tenDaysOfJobs(app: JobsApp, type: string): Promise<void> {
  const ages: [string, number][] = [
    ['10d', 10 * DAY],
    ['3d', 3 * DAY],
    ['2h', 2 * HOUR],
    ['0', 0],
  ];
  for (const [label, ago] of ages) {
    await endJobs(app, type, 'succeeded', [`s${label}-0`, `s${label}-1`], ago);
    if (ago > 0) await endJobs(app, type, 'failed', [`f${label}-0`, `f${label}-1`], ago);
    if (ago > 0) await endJobs(app, type, 'cancelled', [`c${label}-0`], ago);
  }
}

async function kept(app: JobsApp, type: string): Promise<Record<JobOutcome, string[]>> {
  const ids = async (outcome: JobOutcome): Promise<string[]> => (await app.jobs.getJobs(type, { outcome })).map((job) => job.id).sort();
  return { succeeded: await ids('succeeded'), failed: await ids('failed'), cancelled: await ids('cancelled') };
}

const ALL = {
  succeeded: ['s0-0', 's0-1', 's10d-0', 's10d-1', 's2h-0', 's2h-1', 's3d-0', 's3d-1'],
  failed: ['f10d-0', 'f10d-1', 'f2h-0', 'f2h-1', 'f3d-0', 'f3d-1'],
  cancelled: ['c10d-0', 'c2h-0', 'c3d-0'],
};

test('retention keeps exactly what each policy says, by age and by count per outcome, across restarts', async (t) => {
  const dir = await tempDir(t);
  const first = await start(t, dir);
  for (const type of [REPORTS, EMAILS, ARCHIVE]) await tenDaysOfJobs(first, type);
  t.deepEqual(await kept(first, REPORTS), ALL, 'nothing pruned before the restart');
  await first.close();

  const second = await start(t, dir);
  t.deepEqual(await kept(second, REPORTS), {
    // Within the day: the 2h and 0 jobs, of which the newest 3.
    succeeded: ['s0-0', 's0-1', 's2h-1'],
    // Within the week, however many.
    failed: ['f2h-0', 'f2h-1', 'f3d-0', 'f3d-1'],
    // The newest 2, however old.
    cancelled: ['c2h-0', 'c3d-0'],
  });
  t.deepEqual(await kept(second, EMAILS), {
    succeeded: ['s0-0', 's0-1', 's2h-0', 's2h-1'],
    failed: ['f2h-0', 'f2h-1', 'f3d-0', 'f3d-1'],
    cancelled: ['c2h-0'],
  });
  t.deepEqual(await kept(second, ARCHIVE), ALL);
  const { removed } = await second.system.call<PrunerStats>('pruner', { type: 'stats' });
  t.deepEqual(removed, { succeeded: 5 + 4, failed: 2 + 2, cancelled: 1 + 2 });

  // One more within the day: 4 succeeded reports within it, the next app removes the oldest.
  await endJobs(second, REPORTS, 'succeeded', ['new-0'], 0);
  await second.close();
  const third = await start(t, dir);
  t.deepEqual(await kept(third, REPORTS), {
    succeeded: ['new-0', 's0-0', 's0-1'],
    failed: ['f2h-0', 'f2h-1', 'f3d-0', 'f3d-1'],
    cancelled: ['c2h-0', 'c3d-0'],
  });
  t.deepEqual((await third.system.call<PrunerStats>('pruner', { type: 'stats' })).removed, { succeeded: 1, failed: 0, cancelled: 0 });
  t.deepEqual(await kept(third, EMAILS), { succeeded: ['s0-0', 's0-1', 's2h-0', 's2h-1'], failed: ['f2h-0', 'f2h-1', 'f3d-0', 'f3d-1'], cancelled: ['c2h-0'] });
  t.deepEqual(await kept(third, ARCHIVE), ALL);
});
