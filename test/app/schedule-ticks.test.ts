// The schedule ticker's passes, with the time given: each tick of a stored
// schedule adds exactly one job, whose id is the schedule's name and the
// tick's time, also when a pass runs again (a restart between a tick and its
// run) or when several tickers race on the same tick; ticks missed while
// nothing ran are skipped or added as the schedule's backfill policy says;
// a schedule set again carries on from its last tick; cron expressions are
// croner's, time zones and DST included.

import test from 'ava';
import { type Jobs, JobsHandle, type ScheduleInput, tickJobId } from '@jobtree/core';
import { scheduleInput } from '../../packages/jobtree/src/app/app-schedules.js';
import { scheduleTimes } from '../../packages/jobtree/src/app/schedule-times.js';
import { dueTicks, tickSchedules } from '../../packages/jobtree/src/app/schedule-ticks.js';
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

test('a schedule set again with other times starts after its setting: no earlier tick of its new times is added, whatever its backfill', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  await jobs.setSchedule(everyMinute('moved', 'last'));
  await tickSchedules(jobs, T0 + MINUTE);
  // At 10:10, moved to five past each hour: 10:05 came before this setting, so it is no missed tick.
  const hourly = { cron: '5 * * * *', timezone: 'UTC' };
  const moved = await jobs.setSchedule({ ...everyMinute('moved', 'last'), spec: hourly, setAt: T0 + 10 * MINUTE, nextTick: T0 + 65 * MINUTE });
  t.is(moved.lastTick, null);
  const pass = await tickSchedules(jobs, T0 + 10 * MINUTE + 1_000);
  t.deepEqual(pass.added, {});
  t.is(pass.nextAt, T0 + 65 * MINUTE);
  t.deepEqual((await tickSchedules(jobs, T0 + 65 * MINUTE)).added, { moved: [tickJobId('moved', T0 + 65 * MINUTE)] });
  t.deepEqual(await idsOf(jobs, 'moved'), [tickJobId('moved', T0 + MINUTE), tickJobId('moved', T0 + 65 * MINUTE)]);
});

// Serial: it sets the process's time zone across awaits, which tests running alongside would see.
test.serial('a schedule stored without a time zone, set again by app.schedule in the same zone, keeps its last tick and backfills the tick missed meanwhile', async (t) => {
  const before = process.env.TZ;
  process.env.TZ = 'America/New_York';
  t.teardown(() => {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  });
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  // 02:00 in New York is 07:00Z in January.
  const nightly = { cron: '0 2 * * *' };
  await jobs.setSchedule({ name: 'nightly', spec: nightly, type: 'report', data: null, priority: 0, backfill: 'last', setAt: Date.parse('2026-01-04T12:00:00Z'), nextTick: Date.parse('2026-01-05T07:00:00Z') });
  t.deepEqual((await tickSchedules(jobs, Date.parse('2026-01-05T07:00:10Z'))).added, { nightly: ['nightly@2026-01-05T07:00:00.000Z'] });
  // No app ran over the next 02:00; the app that starts at 04:00 sets the schedule again, its zone now spelt out.
  const restart = Date.parse('2026-01-06T09:00:00Z');
  const input = scheduleInput('nightly', nightly.cron, { type: 'report', backfill: 'last' }, restart);
  t.deepEqual(input.spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
  t.is((await jobs.setSchedule(input)).lastTick, Date.parse('2026-01-05T07:00:00Z'));
  t.deepEqual((await tickSchedules(jobs, restart + 1_000)).added, { nightly: ['nightly@2026-01-06T07:00:00.000Z'] });
});

test('a schedule set again with its times spelt another way (a nickname, more spaces, its seconds field) keeps its last tick and backfills the tick missed meanwhile', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.setTypeTimeout('report', 30);
  const at = (iso: string) => Date.parse(iso);
  const nightly = (cron: string, setAt: number): ScheduleInput => ({ name: 'nightly', spec: { cron, timezone: 'UTC' }, type: 'report', data: null, priority: 0, backfill: 'last', setAt, nextTick: null });
  await jobs.setSchedule(nightly('0 0 * * *', at('2026-01-04T12:00:00Z')));
  t.deepEqual((await tickSchedules(jobs, at('2026-01-05T00:00:10Z'))).added, { nightly: ['nightly@2026-01-05T00:00:00.000Z'] });
  // No app ran over the next midnight; the one that starts at 09:00 spells it `@daily`.
  const restart = at('2026-01-06T09:00:00Z');
  t.is((await jobs.setSchedule(nightly('@daily', restart))).lastTick, at('2026-01-05T00:00:00Z'));
  t.deepEqual((await tickSchedules(jobs, restart + 1_000)).added, { nightly: ['nightly@2026-01-06T00:00:00.000Z'] });
  for (const [n, cron] of ['  0  0 * * * ', '0 0 0 * * *', '@midnight'].entries()) {
    t.is((await jobs.setSchedule(nightly(cron, restart + 2_000 + n))).lastTick, at('2026-01-06T00:00:00Z'), cron);
  }
  // Another time is a new schedule: its last tick starts afresh.
  t.is((await jobs.setSchedule(nightly('0 1 * * *', restart + 3_000))).lastTick, null);
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

/** The ticks of a cron expression in a time zone from `from` to `to` (ISO times), as ISO times. */
function ticksOf(cron: string, timezone: string, from: string, to: string): string[] {
  const times = scheduleTimes({ cron, timezone });
  const ticks: string[] = [];
  for (let tick = times.after(Date.parse(from) - 1); tick !== undefined && tick <= Date.parse(to); tick = times.after(tick)) ticks.push(new Date(tick).toISOString());
  return ticks;
}

test('a wall-clock time runs once on the fall-back night and at the end of the gap on the spring-forward night, also in a list of hours or minutes', (t) => {
  // Berlin: 02:00-03:00 is skipped on 2026-03-29 and repeated on 2026-10-25; New York: 01:00-02:00 repeated on 2026-11-01.
  t.deepEqual(ticksOf('0 2 * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T22:59:59Z'), ['2026-10-25T00:00:00.000Z']);
  t.deepEqual(ticksOf('30 1 * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T04:59:59Z'), ['2026-11-01T05:30:00.000Z']);
  t.deepEqual(ticksOf('30 2 * * *', 'America/New_York', '2026-03-08T05:00:00Z', '2026-03-09T03:59:59Z'), ['2026-03-08T07:00:00.000Z']); // 03:00 EDT
  t.deepEqual(ticksOf('30 2,14 * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', '2026-03-29T21:59:59Z'), ['2026-03-29T01:00:00.000Z', '2026-03-29T12:30:00.000Z']);
  t.deepEqual(ticksOf('30 2,14 * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T22:59:59Z'), ['2026-10-25T00:30:00.000Z', '2026-10-25T13:30:00.000Z']);
  t.deepEqual(ticksOf('30 1,13 * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T04:59:59Z'), ['2026-11-01T05:30:00.000Z', '2026-11-01T18:30:00.000Z']);
  t.deepEqual(ticksOf('0,30 2 * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', '2026-03-29T21:59:59Z'), ['2026-03-29T01:00:00.000Z']);
  t.deepEqual(ticksOf('0,30 2 * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T22:59:59Z'), ['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z']);
  // Lord Howe moves by 30 minutes: 02:00-02:30 skipped on 2026-10-04, 01:30-02:00 repeated on 2026-04-05.
  t.deepEqual(ticksOf('15,45 2 * * *', 'Australia/Lord_Howe', '2026-10-03T13:30:00Z', '2026-10-04T12:59:59Z'), ['2026-10-03T15:30:00.000Z', '2026-10-03T15:45:00.000Z']);
  t.deepEqual(ticksOf('15,45 1 * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-05T13:29:59Z'), ['2026-04-04T14:15:00.000Z', '2026-04-04T14:45:00.000Z']);
  // A pass in the repeated hour, just after 02:30 came round again, finds nothing due: the first 02:30 was the tick.
  const twice = { cron: '30 2,14 * * *', timezone: 'Europe/Berlin' };
  const first = Date.parse('2026-10-25T00:30:00Z');
  const record = { name: 'n', spec: twice, type: 'report', data: null, priority: 0, backfill: 'none' as const, setAt: first - MINUTE, lastTick: first, nextTick: null };
  t.is(dueTicks(record, scheduleTimes(twice), first + 60 * MINUTE + 30_000), undefined);
});

test('a step or a wildcard in the time fields runs by the clock across DST: through both fall-back hours, none in the gap; half- and quarter-hour zones too', (t) => {
  const quarters = (from: string, count: number) => Array.from({ length: count }, (_, n) => new Date(Date.parse(from) + n * 15 * MINUTE).toISOString());
  t.deepEqual(ticksOf('*/15 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', '2026-10-25T02:30:00Z'), quarters('2026-10-24T23:30:00Z', 13));
  t.deepEqual(ticksOf('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', '2026-03-29T01:30:00Z'), quarters('2026-03-29T00:30:00Z', 5));
  t.deepEqual(ticksOf('*/15 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', '2026-11-01T07:30:00Z'), quarters('2026-11-01T04:30:00Z', 13));
  t.deepEqual(ticksOf('*/15 * * * *', 'Australia/Lord_Howe', '2026-04-04T14:00:00Z', '2026-04-04T15:30:00Z'), quarters('2026-04-04T14:00:00Z', 7));
  t.deepEqual(ticksOf('0 * * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', '2026-10-25T02:00:00Z'), quarters('2026-10-24T23:00:00Z', 13).filter((_, n) => n % 4 === 0));
  t.deepEqual(ticksOf('30 2 * * *', 'Asia/Kolkata', '2026-03-28T00:00:00Z', '2026-03-29T23:59:59Z'), ['2026-03-28T21:00:00.000Z', '2026-03-29T21:00:00.000Z']);
  t.deepEqual(ticksOf('0 9 * * *', 'Asia/Kathmandu', '2026-03-28T00:00:00Z', '2026-03-29T23:59:59Z'), ['2026-03-28T03:15:00.000Z', '2026-03-29T03:15:00.000Z']);
});

test('a bad cron expression or time zone is JobsError invalid_schedule', (t) => {
  t.throws(() => scheduleTimes({ cron: '61 * * * *' }), { code: 'invalid_schedule', message: /"61 \* \* \* \*".*minute 61 is out of its range 0-59/ });
  t.throws(() => scheduleTimes({ cron: '* * * * *', timezone: 'Mars/Olympus' }), { code: 'invalid_schedule', message: /Mars\/Olympus/ });
});


test('a cron value out of its range is told by its field and as written, months and days of the month counted from 1', (t) => {
  const refusals: [string, RegExp][] = [
    ['0 0 1 13 *', /month 13 is out of its range 1-12$/],
    ['0 0 * 0-12 *', /month 0 is out of its range 1-12$/],
    ['0 0 32 * *', /day of month 32 is out of its range 1-31$/],
    ['0 0 0 * *', /day of month 0 is out of its range 1-31$/],
    ['0 0 * * 8', /day of week 8 is out of its range 0-7$/],
    ['0 24 * * *', /hour 24 is out of its range 0-23$/],
    ['0 0 1,15,40W * *', /day of month 40 is out of its range 1-31$/],
    ['60 0 0 * * *', /second 60 is out of its range 0-59$/],
    ['*/5 0 * 1-13/2 *', /month 13 is out of its range 1-12$/],
  ];
  for (const [cron, message] of refusals) t.throws(() => scheduleTimes({ cron, timezone: 'UTC' }), { code: 'invalid_schedule', message }, cron);
  // Other refusals keep croner's own words.
  t.throws(() => scheduleTimes({ cron: '0 0 * JANX *' }), { code: 'invalid_schedule', message: /JANX/ });
});
