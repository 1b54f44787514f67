// /metrics: valid Prometheus text (checked by a strict parser), counters
// and histograms that move as jobs run, queue gauges, restarts per
// supervisor and child, re-enqueues by the activity monitor, thread count.

import test from 'ava';
import { eventually, request, startAdminApp } from './fixtures/admin-app.js';
import { type Exposition, parsePrometheusText, sum } from './fixtures/prometheus-text.js';

async function scrape(url: string): Promise<Exposition> {
  const answer = await request(`${url}/metrics`);
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
  if (!/^text\/plain/.test(answer.type ?? '')) throw new Error(`/metrics content type ${answer.type}`);
  return parsePrometheusText(String(answer.body));
}

test.serial('/metrics parses as Prometheus text, needs no token, and types every jobtree family', async (t) => {
  const { admin } = await startAdminApp(t);
  const metrics = await scrape(admin.url);
  const expected: Record<string, string> = {
    jobtree_jobs: 'gauge',
    jobtree_jobs_added_total: 'counter',
    jobtree_jobs_accepted_total: 'counter',
    jobtree_jobs_finished_total: 'counter',
    jobtree_job_runs_crashed_total: 'counter',
    jobtree_jobs_failed_total: 'counter',
    jobtree_jobs_reenqueued_total: 'counter',
    jobtree_jobs_removed_total: 'counter',
    jobtree_job_wait_seconds: 'histogram',
    jobtree_job_run_seconds: 'histogram',
    jobtree_restarts_total: 'counter',
    jobtree_threads: 'gauge',
    jobtree_scheduler_jobs: 'gauge',
    jobtree_scheduler_average_age_seconds: 'gauge',
  };
  for (const [name, type] of Object.entries(expected)) t.is(metrics.types.get(name), type, name);
  t.true(sum(metrics, 'jobtree_threads') >= 1);
  t.true(metrics.samples.some((s) => s.name === 'process_cpu_seconds_total'), 'process metrics are there too');
  t.regex(await admin.metrics(), /^# HELP /m, 'app.admin.metrics() gives the same text format');
});

test.serial('counters, histograms and queue gauges move when jobs run', async (t) => {
  const { app, admin } = await startAdminApp(t);
  for (let i = 0; i < 5; i++) await app.add('email', `m${i}`, { i });
  for (let i = 0; i < 3; i++) {
    const job = await app.accept('email', { timeout: 5_000 });
    if (job === undefined) throw new Error('no job');
    await app.finish(job, { done: true });
  }
  // Accept picks at random among the front of the queue: remove one that is still pending.
  const stillPending = (await app.getJobs('email')).find((job) => job.state === 'pending');
  await app.remove('email', stillPending?.id ?? 'none');
  const type = { type: 'email' };
  await eventually(async () => sum(await scrape(admin.url), 'jobtree_jobs', { ...type, state: 'finished' }) === 3, 20_000, 'the gauge to count the finished jobs');
  const metrics = await scrape(admin.url);
  t.is(sum(metrics, 'jobtree_jobs_added_total', type), 5);
  t.is(sum(metrics, 'jobtree_jobs_accepted_total', type), 3);
  t.is(sum(metrics, 'jobtree_jobs_finished_total', type), 3);
  t.is(sum(metrics, 'jobtree_jobs_removed_total', type), 1);
  t.is(sum(metrics, 'jobtree_job_wait_seconds_count', type), 3, 'one add -> start wait per job added and accepted here');
  t.is(sum(metrics, 'jobtree_job_run_seconds_count', type), 3);
  t.true(sum(metrics, 'jobtree_job_run_seconds_sum', type) >= 0);
  t.is(sum(metrics, 'jobtree_job_wait_seconds_bucket', { ...type, le: '+Inf' }), 3);
  t.is(sum(metrics, 'jobtree_jobs', { ...type, state: 'pending' }), 1);
  t.is(sum(metrics, 'jobtree_jobs', { ...type, state: 'running' }), 0);
});

test.serial('restarts are counted per supervisor and child', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.system.kill('notifier_sup');
  await eventually(async () => sum(await scrape(admin.url), 'jobtree_restarts_total', { supervisor: 'jobs_sup', child: 'notifier_sup' }) === 1, 20_000, 'the restart of notifier_sup');
  const metrics = await scrape(admin.url);
  t.is(sum(metrics, 'jobtree_restarts_total', { supervisor: 'jobs_sup', child: 'jobs_server' }), 1, 'rest_for_one restarted jobs_server too');
  t.is(sum(metrics, 'jobtree_restarts_total', { supervisor: 'jobs_sup', child: 'core' }), 0);
});

test.serial('a job whose worker went silent is counted as re-enqueued', async (t) => {
  const { app, admin } = await startAdminApp(t, {}, { short: 1 });
  await app.add('short', 'silent', {});
  const job = await app.accept('short', { timeout: 5_000 });
  t.truthy(job);
  // No update within the 1 s timeout: the activity monitor puts it back.
  await eventually(async () => sum(await scrape(admin.url), 'jobtree_jobs_reenqueued_total', { type: 'short' }) >= 1, 30_000, 'the re-enqueue');
  t.is(await app.getJobState('short', 'silent'), 'pending');
});

test.serial('scheduler gauges appear when the app has a scheduler', async (t) => {
  const { app, admin } = await startAdminApp(t);
  t.is(sum(await scrape(admin.url), 'jobtree_scheduler_jobs'), 0, 'no scheduler, no samples');
  const stats = { total: 4, pending: 1, running: 2, crashed: 1, averageAgeSeconds: { pending: 3, running: 5, crashed: 7 } };
  const summary = { id: 'j1', type: 'email', state: 'running', info: null, error_count: 0, pid: '1', node: 'local', continuous: false, start_time: '2026-01-01T00:00:00.000Z', last_updated: '2026-01-01T00:00:01.000Z', history: [{ timestamp: '2026-01-01T00:00:01.000Z', type: 'started' }] };
  Object.defineProperty(app, 'scheduler', {
    configurable: true,
    value: { stats: () => ({ email: stats }), jobs: () => ({ total_rows: 1, offset: 0, jobs: [summary] }), job: (type: string, id: string) => (type === 'email' && id === 'j1' ? summary : undefined) },
  });
  const metrics = await scrape(admin.url);
  t.is(sum(metrics, 'jobtree_scheduler_jobs', { type: 'email', state: 'running' }), 2);
  t.is(sum(metrics, 'jobtree_scheduler_jobs', { type: 'email', state: 'crashed' }), 1);
  t.is(sum(metrics, 'jobtree_scheduler_average_age_seconds', { type: 'email', state: 'running' }), 5);
  const view = (await request(`${admin.url}/api/scheduler`)).body as { running: boolean; stats: Record<string, unknown>; jobs: { jobs: unknown[] } };
  t.true(view.running);
  t.deepEqual(view.stats, { email: stats });
  t.is(view.jobs.jobs.length, 1);
  await app.add('email', 'j1', {});
  t.deepEqual(((await request(`${admin.url}/api/jobs/email/j1`)).body as { scheduler: unknown }).scheduler, summary);
});
