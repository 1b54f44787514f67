// app.schedule, app.schedules and app.unschedule: the schedule ticker under
// jobs_sup adds each tick's job on the app's clock (sped up here: a minute
// of the app's time is a second), the schedules are in the store (a
// restarted app finds them and carries on), and bad specs are refused at
// the call.

import test from 'ava';
import { JobsError, tickJobId } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { eventually, startTempApp } from './fixtures/temp-app.js';

const MINUTE = 60_000;

test.serial('the ticker adds one job per tick on the app clock; schedules() shows the last and next ticks; unschedule stops them', async (t) => {
  t.timeout(90_000);
  const { app } = await startTempApp(t, { clockSpeed: 60 }, { report: 30 });
  t.truthy(app.system.whereis('schedule_ticker'));
  const stored = await app.schedule('minutely', { everyMs: MINUTE }, { type: 'report', data: { kind: 'minutely' }, priority: 3 });
  t.like(stored, { name: 'minutely', type: 'report', backfill: 'none', lastTick: null });
  t.is((stored.nextTick ?? 0) % MINUTE, 0);
  await eventually(async () => (await app.getJobs('report')).length >= 2, 30_000, 'two ticks');
  const jobs = await app.getJobs('report');
  for (const job of jobs) {
    t.regex(job.id, /^minutely@\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
    t.like(job, { data: { kind: 'minutely' }, priority: 3 });
  }
  t.is(new Set(jobs.map((job) => job.id)).size, jobs.length);
  const [listed] = await app.schedules();
  t.truthy(listed?.lastTick);
  t.true((listed?.nextTick ?? 0) > (listed?.lastTick ?? 0));
  t.true(jobs.some((job) => job.id === tickJobId('minutely', listed!.lastTick!)));
  t.true(await app.unschedule('minutely'));
  t.deepEqual(await app.schedules(), []);
  const after = (await app.getJobs('report')).length;
  // Two ticks' worth of app time with no schedule: nothing more.
  await new Promise((resolve) => setTimeout(resolve, 2_200));
  t.is((await app.getJobs('report')).length, after);
});

test.serial('a schedule survives a restart of the app: the new app lists it and carries on ticking', async (t) => {
  t.timeout(90_000);
  const { app, dir } = await startTempApp(t, {}, { report: 30 });
  await app.schedule('often', { everyMs: 500 }, { type: 'report' });
  await eventually(async () => (await app.getJobs('report')).length >= 1, 30_000, 'a tick');
  await app.close();
  const again = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => again.close());
  t.deepEqual((await again.schedules()).map((schedule) => schedule.name), ['often']);
  const before = (await again.getJobs('report')).length;
  await eventually(async () => (await again.getJobs('report')).length > before, 30_000, 'a tick after the restart');
  const ids = (await again.getJobs('report')).map((job) => job.id);
  t.is(new Set(ids).size, ids.length);
  t.true(ids.every((id) => /^often@.*\.(000|500)Z$/.test(id)), ids.join(' '));
});

test.serial('schedule refuses a bad cron expression, a bad time zone, an unknown option and a time zone for an interval', async (t) => {
  const { app } = await startTempApp(t, {}, { report: 30 });
  await t.throwsAsync(app.schedule('bad', '61 * * * *', { type: 'report' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', '0 9 * * 1-5', { type: 'report', timezone: 'Mars/Olympus' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', { everyMs: 1000 }, { type: 'report', timezone: 'Europe/Paris' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', { everyMs: 0 }, { type: 'report' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', '* * * * *', { type: 'report', every: 5 } as never), { instanceOf: JobsError, code: 'invalid_option' });
  await t.throwsAsync(app.schedule('bad', '* * * * *', { type: 'report', backfill: 'all' as never }), { instanceOf: JobsError, code: 'invalid_schedule' });
  t.deepEqual(await app.schedules(), []);
  const weekdays = await app.schedule('weekdays', '0 9 * * 1-5', { type: 'report', timezone: 'Europe/Paris', backfill: { withinMs: 3_600_000 } });
  t.deepEqual(weekdays.spec, { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });
  t.deepEqual(weekdays.backfill, { withinMs: 3_600_000 });
});
