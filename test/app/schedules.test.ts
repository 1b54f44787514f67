// app.schedule, app.schedules and app.unschedule: the schedule ticker under
// jobs_sup adds each tick's job on the app's clock (sped up here: a minute
// of the app's time is a second), the schedules are in the store (a
// restarted app finds them and carries on), and bad specs are refused at
// the call.

import test, { type ExecutionContext } from 'ava';
import { type Jobs, JobsError, tickJobId } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { PASS_GAP_MS } from '../../packages/jobtree/src/app/schedule-ticker.js';
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
  await app.schedule('often', { everyMs: 1_000 }, { type: 'report' });
  await eventually(async () => (await app.getJobs('report')).length >= 1, 30_000, 'a tick');
  await app.close();
  const again = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => again.close());
  t.deepEqual((await again.schedules()).map((schedule) => schedule.name), ['often']);
  const before = (await again.getJobs('report')).length;
  await eventually(async () => (await again.getJobs('report')).length > before, 30_000, 'a tick after the restart');
  const ids = (await again.getJobs('report')).map((job) => job.id);
  t.is(new Set(ids).size, ids.length);
  t.true(ids.every((id) => /^often@.*:\d\d\.000Z$/.test(id)), ids.join(' '));
});

test.serial('schedule refuses a bad cron expression, a bad time zone, an unknown option and a time zone for an interval', async (t) => {
  const { app } = await startTempApp(t, {}, { report: 30 });
  await t.throwsAsync(app.schedule('bad', '61 * * * *', { type: 'report' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', '0 9 * * 1-5', { type: 'report', timezone: 'Mars/Olympus' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', { everyMs: 1000 }, { type: 'report', timezone: 'Europe/Paris' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', { everyMs: 0 }, { type: 'report' }), { instanceOf: JobsError, code: 'invalid_schedule' });
  await t.throwsAsync(app.schedule('bad', { everyMs: 1 }, { type: 'report' }), { instanceOf: JobsError, code: 'invalid_schedule', message: /at least 1000/ });
  await t.throwsAsync(app.jobs.setSchedule({ name: 'bad', spec: { everyMs: 999 }, type: 'report', data: null, priority: 0, backfill: 'none', nextTick: null }), { instanceOf: JobsError, code: 'invalid_schedule', message: /at least 1000/ });
  await t.throwsAsync(app.schedule('bad', '* * * * *', { type: 'report', every: 5 } as never), { instanceOf: JobsError, code: 'invalid_option' });
  await t.throwsAsync(app.schedule('bad', '* * * * *', { type: 'report', backfill: 'all' as never }), { instanceOf: JobsError, code: 'invalid_schedule' });
  t.deepEqual(await app.schedules(), []);
  const weekdays = await app.schedule('weekdays', '0 9 * * 1-5', { type: 'report', timezone: 'Europe/Paris', backfill: { withinMs: 3_600_000 } });
  t.deepEqual(weekdays.spec, { cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });
  t.deepEqual(weekdays.backfill, { withinMs: 3_600_000 });
});

/** Puts `process.env.TZ` back as it was when the test ends (the test sets it to act as processes in other zones). */
function restoreTimeZone(t: ExecutionContext): void {
  const before = process.env.TZ;
  t.teardown(() => {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  });
}

test.serial('processes in other zones setting the same cron expression without a zone keep the zone it was first set in, and its last tick', async (t) => {
  restoreTimeZone(t);
  const { app } = await startTempApp(t, {}, { report: 30 });
  process.env.TZ = 'America/New_York';
  await app.schedule('nightly', '0 2 * * *', { type: 'report' });
  // As if it had ticked: a setting from another zone must not start it afresh.
  const [stored] = await app.jobs.getSchedules();
  await app.jobs.addScheduleTicks('nightly', stored!.setAt, [], stored!.setAt + 1, null);
  process.env.TZ = 'Asia/Tokyo';
  const again = await app.schedule('nightly', '0 2 * * *', { type: 'report' });
  t.deepEqual(again.spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
  t.is(again.lastTick, stored!.setAt + 1);
  t.is(new Date(again.nextTick!).getUTCHours(), 7); // 02:00 in New York in winter
  // A zone given wins.
  t.deepEqual((await app.schedule('nightly', '0 2 * * *', { type: 'report', timezone: 'Asia/Tokyo' })).spec, { cron: '0 2 * * *', timezone: 'Asia/Tokyo' });
});

test.serial('an empty timezone, in the option or in the spec, is none given: the schedule keeps its zone', async (t) => {
  restoreTimeZone(t);
  const { app } = await startTempApp(t, {}, { report: 30 });
  process.env.TZ = 'America/New_York';
  await app.schedule('nightly', '0 2 * * *', { type: 'report' });
  process.env.TZ = 'Asia/Tokyo';
  t.deepEqual((await app.schedule('nightly', '0 2 * * *', { type: 'report', timezone: '' })).spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
  t.deepEqual((await app.schedule('nightly', { cron: '0 2 * * *', timezone: '' }, { type: 'report' })).spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
});

/**
 * Times the ticker's passes through the app's jobs handle: each pass reads
 * the schedules (its start), then adds the ticks of each (an end per add).
 */
function timeTickerPasses(jobs: Pick<Jobs, 'getSchedules' | 'addScheduleTicks'>): { passStarts: number[]; passEnds: number[] } {
  const passStarts: number[] = [];
  const passEnds: number[] = [];
  const getSchedules = jobs.getSchedules.bind(jobs);
  const addScheduleTicks = jobs.addScheduleTicks.bind(jobs);
  jobs.getSchedules = () => {
    passStarts.push(performance.now());
    return getSchedules();
  };
  jobs.addScheduleTicks = async (...args) => {
    try {
      return await addScheduleTicks(...args);
    } finally {
      passEnds.push(performance.now());
    }
  };
  return { passStarts, passEnds };
}

test.serial("the ticker's rest is never long enough on the app's clock for a tick waiting on it to count as missed", async (t) => {
  t.timeout(90_000);
  // 1200 times real time: a minute of the app's clock is 50 real ms, and PASS_GAP_MS two of its minutes, past LATE_MS.
  const { app } = await startTempApp(t, { clockSpeed: 1_200 }, { report: 3_600 });
  const jobs = app.jobs;
  const { passStarts, passEnds } = timeTickerPasses(jobs);
  await app.schedule('minutely', { everyMs: MINUTE }, { type: 'report' });
  await eventually(async () => passEnds.length >= 21, 30_000, 'twenty passes that added ticks');
  const rests = passEnds.slice(0, 20).map((end) => (passStarts.find((start) => start > end) ?? Number.POSITIVE_INFINITY) - end);
  const median = [...rests].sort((a, b) => a - b)[10] as number;
  t.log(`rests: ${rests.map(Math.round).join(' ')} ms`);
  // A stalled machine lengthens some rests; the ticker's own rule shows in the median, a tick apart at most.
  t.true(median < PASS_GAP_MS, `median rest ${Math.round(median)} ms`);
});

test.serial('a ticker behind its ticks rests between passes: a backlog of missed ticks is added in passes at least PASS_GAP_MS apart, not back to back', async (t) => {
  t.timeout(120_000);
  const { app } = await startTempApp(t, { schedulePollMs: 60_000 }, { report: 3_600 });
  const jobs = app.jobs;
  const { passStarts, passEnds } = timeTickerPasses(jobs);
  const now = Date.now();
  // Three hours of one-second ticks, all within the backfill window: 22 passes of at most MAX_TICKS_PER_CALL.
  await jobs.setSchedule({ name: 'backlog', spec: { everyMs: 1_000 }, type: 'report', data: null, priority: 0, backfill: { withinMs: 4 * 3_600_000 }, setAt: now - 3 * 3_600_000, nextTick: null });
  // Setting another schedule wakes the ticker at once.
  await app.schedule('wake', '0 0 1 1 *', { type: 'report', timezone: 'UTC' });
  await eventually(async () => (await app.pendingCount('report')) >= 3 * 3_600, 60_000, 'the backlog added');
  // The rest from the end of each pass of the backlog to the start of the next.
  const rests = passEnds.slice(0, 21).map((end) => Math.round((passStarts.find((start) => start > end) ?? Number.POSITIVE_INFINITY) - end));
  t.log(`rests: ${rests.join(' ')} ms`);
  t.is(rests.length, 21);
  t.true(rests.every((rest) => rest >= PASS_GAP_MS - 1), rests.join(' '));
});
