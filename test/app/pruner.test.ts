// The app's pruner keeps each type's finished jobs within its retention
// policy: exactly the newest by count, per outcome, a type kept for ever
// untouched; it carries on after the app starts again on the same store and
// after its supervisor restarts it; it removes a bounded batch per
// transaction; `retention: false` runs none.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { type JobsApp, type StartJobsOptions, startJobs } from 'jobtree';
import type { JobOutcome, Jobs } from '@jobtree/core';
import type { PrunerStats } from '../../packages/jobtree/src/app/pruner.js';
import { eventually, restarted } from './fixtures/temp-app.js';

const KEPT = 'kept';
const PRUNED = 'pruned';

const RETENTION: StartJobsOptions['retention'] = {
  default: { succeeded: { maxCount: 3 }, failed: { maxCount: 1, maxAgeSeconds: 'forever' }, cancelled: false },
  types: { [KEPT]: false },
  intervalSeconds: 0.05,
  batchSize: 10,
};

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-pruner-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function start(t: ExecutionContext, dir: string, options: Partial<StartJobsOptions> = { retention: RETENTION }): Promise<JobsApp> {
  const app = await startJobs({ path: dir, threads: 1, ...options } as StartJobsOptions);
  t.teardown(() => app.close());
  for (const type of [KEPT, PRUNED]) await app.jobs.setTypeTimeout(type, 30);
  return app;
}

/** Ends `ids` as `outcome`, one after the other (so in this order of finish time). */
async function endJobs(jobs: Jobs, type: string, ids: readonly string[], outcome: JobOutcome): Promise<void> {
  for (const id of ids) {
    await jobs.add(type, id, { id });
    if (outcome === 'cancelled') {
      await jobs.cancel(type, id);
      continue;
    }
    const job = await jobs.accept(type);
    if (job?.id !== id) throw new Error(`accepted ${job?.id}, not ${id}`);
    if (outcome === 'succeeded') await jobs.complete(job);
    else await jobs.fail(job, new Error('no'));
  }
}

const ids = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(3, '0')}`);

async function idsOf(app: JobsApp, type: string, outcome: JobOutcome): Promise<string[]> {
  return (await app.jobs.getJobs(type, { outcome })).map((job) => job.id).sort();
}

/** Waits until `type`'s finished jobs of `outcome` are exactly `expected`. */
async function keeps(app: JobsApp, type: string, outcome: JobOutcome, expected: string[]): Promise<void> {
  let last: string[] = [];
  await eventually(
    async () => {
      last = await idsOf(app, type, outcome);
      return JSON.stringify(last) === JSON.stringify(expected);
    },
    15_000,
    `${type} to keep ${expected.join(',')} ${outcome} (has ${last.join(',')})`,
  );
}

test('the pruner keeps exactly what each policy says, and carries on when the app starts again on the same store', async (t) => {
  const dir = await tempDir(t);
  const first = await start(t, dir);
  await endJobs(first.jobs, PRUNED, ids('s', 6), 'succeeded');
  await endJobs(first.jobs, PRUNED, ids('f', 3), 'failed');
  await endJobs(first.jobs, PRUNED, ids('c', 2), 'cancelled');
  await endJobs(first.jobs, KEPT, ids('s', 5), 'succeeded');
  await keeps(first, PRUNED, 'succeeded', ['s003', 's004', 's005']);
  await keeps(first, PRUNED, 'failed', ['f002']);
  // A round over every type has ended since: what the policies keep stayed.
  const { rounds } = await first.system.call<PrunerStats>('pruner', { type: 'stats' });
  await eventually(async () => (await first.system.call<PrunerStats>('pruner', { type: 'stats' })).rounds > rounds + 1);
  t.deepEqual(await idsOf(first, PRUNED, 'cancelled'), ['c000', 'c001']);
  t.deepEqual(await idsOf(first, KEPT, 'succeeded'), ids('s', 5));
  t.deepEqual(await idsOf(first, PRUNED, 'succeeded'), ['s003', 's004', 's005']);
  await first.close();

  // Jobs finished while no pruner runs; the next app's pruner brings the store back within the policy.
  const second = await start(t, dir, { retention: false });
  await endJobs(second.jobs, PRUNED, ids('t', 4), 'succeeded');
  t.is(second.system.whereis('pruner'), undefined, 'retention: false runs no pruner');
  await second.close();
  const third = await start(t, dir);
  await keeps(third, PRUNED, 'succeeded', ['t001', 't002', 't003']);
  t.deepEqual(await idsOf(third, PRUNED, 'failed'), ['f002']);
  t.deepEqual(await idsOf(third, KEPT, 'succeeded'), ids('s', 5));
});

test('the pruner removes at most its batch size per transaction, and its supervisor restarts it when it is killed', async (t) => {
  const dir = await tempDir(t);
  const app = await start(t, dir);
  await endJobs(app.jobs, PRUNED, ids('a', 28), 'succeeded');
  await keeps(app, PRUNED, 'succeeded', ['a025', 'a026', 'a027']);
  const stats = await app.system.call<PrunerStats>('pruner', { type: 'stats' });
  t.is(stats.removed.succeeded, 25);
  t.true(stats.largestBatch <= 10, `a batch of ${stats.largestBatch}`);
  t.true(stats.batches >= 3);

  const before = app.system.whereis('pruner');
  await app.system.kill('pruner');
  await restarted(app, 'pruner', before);
  await endJobs(app.jobs, PRUNED, ids('b', 4), 'succeeded');
  await keeps(app, PRUNED, 'succeeded', ['b001', 'b002', 'b003']);
  // Its older siblings stayed: only the pruner restarted.
  t.is(app.system.tree().children.find((node) => node.name === 'jobs_server')?.restarts ?? 0, 0);
});
