// The admin endpoint's JSON API on job outcomes: the jobs of a type filtered
// by how they ended, one job with its outcome, result, error, attempts and
// history, and retry and cancel behind the token, their typed errors
// answered with 404, 409 and 400.

import test from 'ava';
import type { JobsApp } from 'jobtree';
import { request, startAdminApp } from './fixtures/admin-app.js';

/** Three jobs of `email` that ended each its own way: `failed`, `sent` succeeded, `dropped` cancelled. */
async function endThreeWays(app: JobsApp): Promise<void> {
  await app.add('email', 'failed', { to: 'ada@example.com' });
  const failing = await app.accept('email', { timeout: 5_000 });
  if (failing === undefined) throw new Error('no job');
  await app.jobs.fail(failing, { message: 'mailbox full', name: 'MailError', history: [{ type: 'crashed', reason: 'mailbox full' }] });
  await app.add('email', 'sent', { to: 'bob@example.com' });
  const sending = await app.accept('email', { timeout: 5_000 });
  if (sending === undefined) throw new Error('no job');
  await app.jobs.complete(sending, { messageId: 'm-1' });
  await app.add('email', 'dropped', { to: 'eve@example.com' });
  await app.cancel('email', 'dropped');
  await app.add('email', 'waiting', { to: 'joe@example.com' });
}

test.serial('the jobs of a type are filtered by outcome, and one job reads with its outcome, result, error, attempts and history', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await endThreeWays(app);

  for (const [outcome, ids] of [
    ['failed', ['failed']],
    ['succeeded', ['sent']],
    ['cancelled', ['dropped']],
  ] as const) {
    const answer = await request(`${admin.url}/api/jobs/email?outcome=${outcome}`);
    t.is(answer.status, 200);
    const body = answer.body as { outcome: string; total: number; jobs: { id: string; outcome: string }[] };
    t.is(body.outcome, outcome);
    t.is(body.total, ids.length, outcome);
    t.deepEqual(body.jobs.map((job) => job.id), [...ids], outcome);
  }
  const every = (await request(`${admin.url}/api/jobs/email`)).body as { outcome: null; total: number };
  t.like(every, { outcome: null, total: 4 });

  const failed = await request(`${admin.url}/api/jobs/email/failed`);
  t.is(failed.status, 200);
  t.like(failed.body, {
    state: 'finished',
    outcome: 'failed',
    data: { to: 'ada@example.com' },
    attempts: 1,
    error: { message: 'mailbox full', name: 'MailError', history: [{ type: 'crashed', reason: 'mailbox full' }] },
  });
  t.like((await request(`${admin.url}/api/jobs/email/sent`)).body, { outcome: 'succeeded', data: { to: 'bob@example.com' }, result: { messageId: 'm-1' } });
  t.like((await request(`${admin.url}/api/jobs/email/dropped`)).body, { outcome: 'cancelled', data: { to: 'eve@example.com' } });
});

test.serial('an outcome filter that is not an outcome, or with a state other than finished, is a bad request', async (t) => {
  const { admin } = await startAdminApp(t);
  const bogus = await request(`${admin.url}/api/jobs/email?outcome=exploded`);
  t.is(bogus.status, 400);
  t.is((bogus.body as { error: { code: string } }).error.code, 'bad_request');
  const mixed = await request(`${admin.url}/api/jobs/email?outcome=failed&state=pending`);
  t.is(mixed.status, 400);
  t.is((await request(`${admin.url}/api/jobs/email?outcome=failed&state=finished`)).status, 200);
});

test.serial('retry and cancel need the token; retry runs a failed job again with its input, cancel ends a pending one', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await endThreeWays(app);
  for (const path of ['/api/jobs/email/failed/retry', '/api/jobs/email/waiting/cancel']) {
    const none = await request(`${admin.url}${path}`, 'POST');
    t.is(none.status, 401, path);
  }
  t.like(await app.getJob('email', 'failed'), { outcome: 'failed' });
  t.is(await app.getJobState('email', 'waiting'), 'pending');

  const retried = await request(`${admin.url}/api/jobs/email/failed/retry`, 'POST', { token: admin.token });
  t.is(retried.status, 200);
  t.deepEqual(retried.body, { type: 'email', id: 'failed', state: 'pending' });
  const again = await app.getJob('email', 'failed');
  t.like(again, { state: 'pending', data: { to: 'ada@example.com' }, attempts: 0 });
  t.is(again?.outcome, undefined);

  const cancelled = await request(`${admin.url}/api/jobs/email/waiting/cancel`, 'POST', { token: admin.token });
  t.is(cancelled.status, 200);
  t.deepEqual(cancelled.body, { type: 'email', id: 'waiting', cancelled: true });
  t.like(await app.getJob('email', 'waiting'), { state: 'finished', outcome: 'cancelled' });
  // A job that had ended already is left as it was: the answer says so.
  const late = await request(`${admin.url}/api/jobs/email/sent/cancel`, 'POST', { token: admin.token });
  t.deepEqual(late.body, { type: 'email', id: 'sent', cancelled: false });
  t.like(await app.getJob('email', 'sent'), { outcome: 'succeeded' });
});

test.serial('retry of a job that did not fail or get cancelled answers 409, and retry or cancel of a missing job 404', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await endThreeWays(app);
  for (const id of ['sent', 'waiting']) {
    const refused = await request(`${admin.url}/api/jobs/email/${id}/retry`, 'POST', { token: admin.token });
    t.is(refused.status, 409, id);
    t.is((refused.body as { error: { code: string } }).error.code, 'not_retryable', id);
  }
  for (const action of ['retry', 'cancel']) {
    const missing = await request(`${admin.url}/api/jobs/email/nobody/${action}`, 'POST', { token: admin.token });
    t.is(missing.status, 404, action);
    t.is((missing.body as { error: { code: string } }).error.code, 'not_found', action);
  }
});
