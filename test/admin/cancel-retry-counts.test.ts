// Cancels and retries are counted beside the runs' own outcomes: a job this
// app ended cancelled counts once (a cancel of a job that had ended already
// does not), a failed or cancelled job run again by retry counts as retried,
// and /metrics and /api/types report the same counts.

import test from 'ava';
import { eventually, request, startAdminApp } from './fixtures/admin-app.js';
import { parsePrometheusText, sum } from './fixtures/prometheus-text.js';

async function metricCounts(url: string, type: string) {
  const metrics = parsePrometheusText(String((await request(`${url}/metrics`)).body));
  return {
    finished: sum(metrics, 'jobtree_jobs_finished_total', { type }),
    failed: sum(metrics, 'jobtree_jobs_failed_total', { type }),
    cancelled: sum(metrics, 'jobtree_jobs_cancelled_total', { type }),
    retried: sum(metrics, 'jobtree_jobs_retried_total', { type }),
    runs: sum(metrics, 'jobtree_job_run_seconds_count', { type }),
  };
}

async function apiTotals(url: string, type: string): Promise<unknown> {
  const body = (await request(`${url}/api/types`)).body as { types: { type: string; totals: unknown }[] };
  return body.types.find((entry) => entry.type === type)?.totals;
}

test.serial('cancels and retries are counted per type, a run given up as failed, and each run in the run-time histogram', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.add('email', 'failing', { n: 1 });
  const job = await app.accept('email', { timeout: 5_000 });
  if (job === undefined) throw new Error('no job');
  await app.jobs.fail(job, new Error('mailbox full'));
  await app.add('email', 'dropped', { n: 2 });
  t.true(await app.cancel('email', 'dropped'));
  // Ended already: nothing is cancelled, nothing counted.
  t.false(await app.cancel('email', 'dropped'));
  await app.retry('email', 'failing');
  await app.retry('email', 'dropped');
  await t.throwsAsync(app.retry('email', 'dropped'));

  const expected = { finished: 0, failed: 1, cancelled: 1, retried: 2, runs: 1 };
  await eventually(async () => (await metricCounts(admin.url, 'email')).retried === 2, 10_000, 'the retries to be counted');
  t.deepEqual(await metricCounts(admin.url, 'email'), expected);
  t.like(await apiTotals(admin.url, 'email'), { finished: 0, failed: 1, cancelled: 1, retried: 2 });
});
