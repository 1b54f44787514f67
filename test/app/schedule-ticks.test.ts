// The schedule ticker's passes, with the time given: each tick of a stored
// schedule adds exactly one job, whose id is the schedule's name and the
// tick's time, also when a pass runs again (a restart between a tick and its
// run) or when several tickers race on the same tick; ticks missed while
// nothing ran are skipped or added as the schedule's backfill policy says;
// a schedule set again carries on from its last tick; cron expressions are
// croner's, time zones and DST included.

import test from 'ava';
import { type Jobs, JobsHandle, type ScheduleInput, tickJobId } from '@jobtree/core';
import { scheduleTimes } from '../../packages/jobtree/src/app/schedule-times.js';
import { tickSchedules } from '../../packages/jobtree/src/app/schedule-ticks.js';
import { openTempJobs } from '../jobs/temp-jobs.js';

const MINUTE = 60_000;
/** A time on a whole hour, so that minute ticks fall on round numbers. */
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);

function everyMinute(name: string, backfill: ScheduleInput['backfill'] = 'none'): ScheduleInput {
  return { name, spec: { everyMs: MINUTE }, type: 'report', data: { kind: name }, priority: 0, backfill, setAt: T0, nextTick: T0 + MINUTE };
}

async function idsOf(jobs: Jobs, name: string): Promise<string[]> {
  return (await jobs.getJobs('report')).map((job) => job.id).filter((id) => id.startsWith(`${name}@`));
}

test('each tick adds one job named after the schedule and the tick, with the schedule data; a pass at the same time adds nothing', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule(everyMinute('hourly'));
  t.deepEqual((await tickSchedules(jobs, T0 + 30_000)).added, {});
  const first = await tickSchedules(jobs, T0 + MINUTE + 5);
  t.deepEqual(first.added, { hourly: [tickJobId('hourly', T0 + MINUTE)] });
  t.is(first.nextAt, T0 + 2 * MINUTE);
  t.is(tickJobId('hourly', T0 + MINUTE), 'hourly@2026-01-05T10:01:00.000Z');
  t.like(await jobs.getJob('report', 'hourly@2026-01-05T10:01:00.000Z'), { state: 'pending', data: { kind: 'hourly' } });
  t.deepEqual((await tickSchedules(jobs, T0 + MINUTE + 5)).added, {});
  t.deepEqual((await tickSchedules(jobs, T0 + 2 * MINUTE + 59_000)).added, { hourly: [tickJobId('hourly', T0 + 2 * MINUTE)] });
  t.deepEqual(await idsOf(jobs, 'hourly'), [1, 2].map((n) => tickJobId('hourly', T0 + n * MINUTE)));
  t.like(await jobs.getSchedule('hourly'), { lastTick: T0 + 2 * MINUTE, nextTick: T0 + 3 * MINUTE });
  // Two ticks due at once (a pass late by less than a minute): both, once each.
  await jobs.setSchedule({ ...everyMinute('fast'), spec: { everyMs: 20_000 } });
  t.deepEqual((await tickSchedules(jobs, T0 + 45_000)).added, { fast: [tickJobId('fast', T0 + 20_000), tickJobId('fast', T0 + 40_000)] });
});

test("a restart between a tick and its job's run: the next pass finds the tick handled, its job there once", async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule(everyMinute('restart'));
  await tickSchedules(jobs, T0 + MINUTE);
  // A job handled by its worker before the restart is not enqueued again either.
  const job = await jobs.accept('report');
  t.is(job?.id, tickJobId('restart', T0 + MINUTE));
  await jobs.finish(job!);
  const again = new JobsHandle(database);
  t.teardown(() => again.close());
  t.deepEqual((await tickSchedules(again, T0 + MINUTE + 10)).added, {});
  t.is(await again.getJobState('report', tickJobId('restart', T0 + MINUTE)), 'finished');
  // Even had its record gone back in time (a ticker computing from an old read), the job's existence stops a second add.
  const record = await again.getSchedule('restart');
  t.deepEqual(await again.addScheduleTicks('restart', record!.setAt, [T0 + MINUTE], T0 + MINUTE, null), []);
  t.deepEqual(await idsOf(again, 'restart'), [tickJobId('restart', T0 + MINUTE)]);
});

test('tickers racing on the same ticks add each tick once', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule(everyMinute('raced', { withinMs: 10 * MINUTE }));
  const handles = [jobs, ...Array.from({ length: 3 }, () => new JobsHandle(database))];
  t.teardown(() => Promise.all(handles.slice(1).map((handle) => handle.close())));
  const passes = await Promise.all(handles.flatMap((handle) => [tickSchedules(handle, T0 + 5 * MINUTE), tickSchedules(handle, T0 + 5 * MINUTE)]));
  const added = passes.flatMap((pass) => pass.added.raced ?? []);
  const expected = [1, 2, 3, 4, 5].map((n) => tickJobId('raced', T0 + n * MINUTE));
  t.deepEqual(added.sort(), expected);
  t.deepEqual(await idsOf(jobs, 'raced'), expected);
});

test("missed ticks: 'none' skips them, 'last' adds the latest of them, { withinMs } those within the window; on-time ticks run under each", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  for (const [name, backfill] of [
    ['none', 'none'],
    ['last', 'last'],
    ['within', { withinMs: 5 * MINUTE }],
  ] as const) {
    await jobs.setSchedule(everyMinute(name, backfill));
  }
  await tickSchedules(jobs, T0 + MINUTE);
  // Down from just after the first tick until the tenth: ticks 2 to 9 missed, tick 10 on time.
  const pass = await tickSchedules(jobs, T0 + 10 * MINUTE);
  const at = (...minutes: number[]) => minutes.map((n) => tickJobId('', T0 + n * MINUTE).slice(1));
  const after = (name: string) => pass.added[name]?.map((id) => id.slice(name.length + 1));
  t.deepEqual(after('none'), at(10));
  t.deepEqual(after('last'), at(9, 10));
  t.deepEqual(after('within'), at(6, 7, 8, 9, 10));
  for (const name of ['none', 'last', 'within']) t.like(await jobs.getSchedule(name), { lastTick: T0 + 10 * MINUTE }, name);
  // A tick late by less than a minute is on time, under 'none' too.
  t.deepEqual((await tickSchedules(jobs, T0 + 11 * MINUTE + 59_000)).added.none, [tickJobId('none', T0 + 11 * MINUTE)]);
});

test('a schedule set again keeps its last tick; a pass computed from the schedule before is refused', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  const first = await jobs.setSchedule(everyMinute('reset'));
  await tickSchedules(jobs, T0 + MINUTE);
  const second = await jobs.setSchedule({ ...everyMinute('reset'), setAt: T0 + MINUTE + 1, data: { kind: 'v2' } });
  t.is(second.lastTick, T0 + MINUTE);
  t.is(await jobs.addScheduleTicks('reset', first.setAt, [T0 + 2 * MINUTE], T0 + 2 * MINUTE, null), undefined);
  t.deepEqual((await tickSchedules(jobs, T0 + 2 * MINUTE)).added, { reset: [tickJobId('reset', T0 + 2 * MINUTE)] });
  t.like(await jobs.getJob('report', tickJobId('reset', T0 + 2 * MINUTE)), { data: { kind: 'v2' } });
  t.true(await jobs.removeSchedule('reset'));
  t.false(await jobs.removeSchedule('reset'));
  t.deepEqual((await tickSchedules(jobs, T0 + 3 * MINUTE)).added, {});
});

test("a schedule whose type has no timeout adds nothing and holds the others up not at all; it carries on once the type has one", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule({ ...everyMinute('orphan'), type: 'untimed' });
  await jobs.setSchedule(everyMinute('fine'));
  const pass = await tickSchedules(jobs, T0 + MINUTE);
  t.deepEqual(pass.added, { fine: [tickJobId('fine', T0 + MINUTE)] });
  t.regex(pass.failed.orphan ?? '', /no_type_timeout/);
  await jobs.setTypeTimeout('untimed', 30);
  t.deepEqual((await tickSchedules(jobs, T0 + MINUTE + 1_000)).added, { orphan: [tickJobId('orphan', T0 + MINUTE)] });
});

test('cron expressions: seconds optional, a time zone, and the DST gap (a 02:30 daily in Berlin runs at 03:00 on the spring-forward day)', async (t) => {
  const daily = scheduleTimes({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
  const before = Date.parse('2026-03-28T12:00:00Z');
  const gapDay = daily.after(before)!;
  t.is(new Date(gapDay).toISOString(), '2026-03-29T01:00:00.000Z'); // 03:00 CEST: 02:30 does not exist that night
  t.is(new Date(daily.after(gapDay)!).toISOString(), '2026-03-30T00:30:00.000Z'); // 02:30 CEST
  t.is(new Date(daily.after(Date.parse('2026-01-10T00:00:00Z'))!).toISOString(), '2026-01-10T01:30:00.000Z'); // 02:30 CET
  const everyTen = scheduleTimes({ cron: '*/10 * * * * *' });
  t.is(everyTen.after(T0), T0 + 10_000);
  t.is(everyTen.atOrBefore(T0 + 15_000), T0 + 10_000);
  t.is(everyTen.atOrBefore(T0 + 10_000), T0 + 10_000);

  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule({ name: 'nightly', spec: { cron: '30 2 * * *', timezone: 'Europe/Berlin' }, type: 'report', data: null, priority: 0, backfill: 'none', setAt: before, nextTick: gapDay });
  t.deepEqual((await tickSchedules(jobs, gapDay + 30_000)).added, { nightly: ['nightly@2026-03-29T01:00:00.000Z'] });
});

test('a bad cron expression or time zone is JobsError invalid_schedule', (t) => {
  t.throws(() => scheduleTimes({ cron: '61 * * * *' }), { code: 'invalid_schedule', message: /"61 \* \* \* \*"/ });
  t.throws(() => scheduleTimes({ cron: '* * * * *', timezone: 'Mars/Olympus' }), { code: 'invalid_schedule', message: /Mars\/Olympus/ });
});

