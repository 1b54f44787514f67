// Runs are counted by how they ended: a run that finished its job, a run
// that crashed (its job runs again after a backoff) and a job given up once
// out of attempts are three different counts, and /metrics, /api/types and
// the jobtree command report the same ones. A crashed run goes back to the
// queue through a finish call, which must not count it as finished.

import test from 'ava';
import crashOnce from '../app/fixtures/crash-once-handler.js';
import { json, jobtree } from '../cli/fixtures/run-cli.js';
import alwaysCrash from './fixtures/always-crash-handler.js';
import { eventually, request, startAdminApp } from './fixtures/admin-app.js';
import { parsePrometheusText, sum } from './fixtures/prometheus-text.js';

/** 60 times real time: a first crash's 30-second backoff lasts half a second. */
const FAST = { clockSpeed: 60 };

interface Counts {
  finished: number;
  crashed: number;
  failed: number;
}

async function metricCounts(url: string, type: string): Promise<Counts & { accepted: number }> {
  const metrics = parsePrometheusText(String((await request(`${url}/metrics`)).body));
  return {
    accepted: sum(metrics, 'jobtree_jobs_accepted_total', { type }),
    finished: sum(metrics, 'jobtree_jobs_finished_total', { type }),
    crashed: sum(metrics, 'jobtree_job_runs_crashed_total', { type }),
    failed: sum(metrics, 'jobtree_jobs_failed_total', { type }),
  };
}

async function apiTotals(url: string, type: string): Promise<unknown> {
  const body = (await request(`${url}/api/types`)).body as { types: { type: string; totals: unknown }[] };
  return body.types.find((entry) => entry.type === type)?.totals;
}

test.serial('a run that crashes once and then succeeds counts one crashed run and one finished job, no failure', async (t) => {
  const { app, admin, dir } = await startAdminApp(t, FAST);
  await app.process('email', crashOnce, { threads: 1 });
  await app.add('email', 'once', null);
  await eventually(async () => (await metricCounts(admin.url, 'email')).finished > 0, 30_000, 'the second run to finish the job');
  t.deepEqual((await app.getJob('email', 'once'))?.result, { attempt: 2 });

  const expected = { accepted: 2, finished: 1, crashed: 1, failed: 0 };
  t.deepEqual(await metricCounts(admin.url, 'email'), expected);
  t.like(await apiTotals(admin.url, 'email'), expected);

  const { types } = json<{ types: { type: string; totals: unknown }[] }>(await jobtree('types', '--json', '--path', dir));
  t.like(types.find((entry) => entry.type === 'email')?.totals, expected);
  const status = json<{ types: { type: string; totals: unknown }[] }>(await jobtree('status', '--json', '--path', dir));
  t.like(status.types.find((entry) => entry.type === 'email')?.totals, expected);
  const text = await jobtree('types', '--path', dir);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /^type\s+timeout\s+paused\s+pending\s+running\s+finished\s+accepted\s+succeeded\s+crashed\s+failed$/m);
  t.regex(text.stdout, /^email\s+30s\s+-\s+0\s+0\s+1\s+2\s+1\s+1\s+0$/m);
});

test.serial('a job out of attempts counts as failed, its earlier crashed runs as crashed, and nothing as finished', async (t) => {
  const { app, admin, dir } = await startAdminApp(t, FAST);
  await app.process('email', alwaysCrash, { threads: 1, attempts: 2 });
  await app.add('email', 'doomed', null);
  await eventually(async () => (await metricCounts(admin.url, 'email')).failed > 0, 30_000, 'the job to be given up');
  t.like(await app.getJob('email', 'doomed'), { outcome: 'failed', attempts: 2 });

  const expected = { accepted: 2, finished: 0, crashed: 1, failed: 1 };
  t.deepEqual(await metricCounts(admin.url, 'email'), expected);
  t.like(await apiTotals(admin.url, 'email'), expected);
  const { types } = json<{ types: { type: string; totals: unknown }[] }>(await jobtree('types', '--json', '--path', dir));
  t.like(types.find((entry) => entry.type === 'email')?.totals, expected);
});

test.serial('a job given up on its only attempt counts as failed without a crashed run', async (t) => {
  const { app, admin } = await startAdminApp(t, FAST);
  await app.process('email', alwaysCrash, { threads: 1, attempts: 1 });
  await app.add('email', 'once-only', null);
  await eventually(async () => (await metricCounts(admin.url, 'email')).failed > 0, 30_000, 'the job to be given up');
  t.deepEqual(await metricCounts(admin.url, 'email'), { accepted: 1, finished: 0, crashed: 0, failed: 1 });
});

test.serial('a finish that sends a job flagged for resubmission back to the queue is not counted as finished', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.add('email', 'again', {});
  const job = await app.accept('email', { timeout: 5_000 });
  if (job === undefined) throw new Error('no job');
  const flagged = await app.resubmit(job);
  t.is(await app.finish(flagged), 'pending');
  t.like(await metricCounts(admin.url, 'email'), { finished: 0, failed: 0 });
  t.like(await apiTotals(admin.url, 'email'), { accepted: 1, finished: 0 });
});
