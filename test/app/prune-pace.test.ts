// The pruner's pace: at most `retention.maxRemovalsPerSecond` jobs a second,
// by a pause after each batch worth its jobs at that rate; a checked option
// with a default, Infinity for batches back to back.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import type { PrunerStats } from '../../packages/jobtree/src/app/pruner.js';
import { DEFAULT_MAX_REMOVALS_PER_SECOND, pruneDelayMs } from '../../packages/jobtree/src/app/prune-pace.js';
import { checkRetentionOptions } from '../../packages/jobtree/src/app/retention-options.js';
import { eventually } from './fixtures/temp-app.js';

test('the pause after a batch is what its jobs are worth at the rate, less the time the batch took', (t) => {
  t.is(pruneDelayMs(500, 0, 2_000), 250);
  t.is(pruneDelayMs(500, 100, 2_000), 150);
  t.is(pruneDelayMs(500, 400, 2_000), 0);
  t.is(pruneDelayMs(0, 0, 2_000), 0);
  t.is(pruneDelayMs(500, 0, Number.POSITIVE_INFINITY), 0);
});

test('maxRemovalsPerSecond has a default, takes Infinity, and refuses anything but a number > 0', (t) => {
  t.like(checkRetentionOptions(undefined), { maxRemovalsPerSecond: DEFAULT_MAX_REMOVALS_PER_SECOND });
  t.like(checkRetentionOptions({ maxRemovalsPerSecond: 50 }), { maxRemovalsPerSecond: 50 });
  t.like(checkRetentionOptions({ maxRemovalsPerSecond: Number.POSITIVE_INFINITY }), { maxRemovalsPerSecond: Number.POSITIVE_INFINITY });
  for (const bad of [0, -1, Number.NaN, '100']) {
    t.throws(() => checkRetentionOptions({ maxRemovalsPerSecond: bad }), { code: 'invalid_option' }, String(bad));
  }
});

test('the pruner waits after a batch until its jobs are worth the time at its rate', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-prune-pace-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const jobs = await openJobs({ path: dir });
  await jobs.setTypeTimeout('paced', 30);
  const ids = Array.from({ length: 30 }, (_, index) => `j${index}`);
  await jobs.addMany(
    'paced',
    ids.map((id) => ({ id })),
  );
  await jobs.completeMany((await jobs.acceptMany('paced', 30)).map((job) => ({ job })));
  await jobs.close();

  // 10 jobs a batch at 1 a second: the second batch is 10 s away, far more
  // than a loaded machine's polls can be late by.
  const app = await startJobs({
    path: dir,
    threads: 1,
    retention: { default: { succeeded: { maxCount: 0 }, failed: false, cancelled: false }, intervalSeconds: 0.05, batchSize: 10, maxRemovalsPerSecond: 1 },
  });
  t.teardown(() => app.close());
  const stats = (): Promise<PrunerStats> => app.system.call<PrunerStats>('pruner', { type: 'stats' });
  await eventually(async () => (await stats()).batches >= 1, 15_000, 'a first prune batch');
  // Back to back, the other two batches would take a few milliseconds.
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.like(await stats(), { batches: 1, removed: { succeeded: 10 } });
  t.is((await app.jobs.getJobs('paced', { outcome: 'succeeded' })).length, 20);
});
