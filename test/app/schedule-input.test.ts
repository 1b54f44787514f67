// What app.schedule stores from its arguments: a cron expression without a
// time zone keeps the zone of the schedule it replaces, else takes the zone
// of the process that set it (every process and node then ticks it at the
// same instants, whatever its own zone); an expression that never matches,
// and an interval under a second, are refused at the call.

import test from 'ava';
import { MIN_EVERY_MS, type ScheduleRecord } from '@jobtree/core';
import { scheduleInput } from '../../packages/jobtree/src/app/app-schedules.js';
import { scheduleTimes } from '../../packages/jobtree/src/app/schedule-times.js';

const NOW = Date.parse('2026-01-10T00:00:00Z');

/** Runs `body` with the process's time zone set to `zone`, then restores it. */
function inZone<T>(zone: string, body: () => T): T {
  const before = process.env.TZ;
  process.env.TZ = zone;
  try {
    return body();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

test('a cron expression without a time zone ticks in the zone of the process that set it, in a process of any other zone', (t) => {
  const nightly = inZone('America/New_York', () => scheduleInput('nightly', '0 2 * * *', { type: 'report' }, NOW));
  const asSpec = inZone('America/New_York', () => scheduleInput('nightly', { cron: '0 2 * * *' }, { type: 'report' }, NOW));
  t.deepEqual(nightly.spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
  t.deepEqual(asSpec.spec, nightly.spec);
  t.is(nightly.nextTick, Date.parse('2026-01-10T07:00:00Z'));
  // The owner, or another node, in Tokyo: 02:00 in New York all the same.
  t.is(inZone('Asia/Tokyo', () => scheduleTimes(nightly.spec).after(NOW)), Date.parse('2026-01-10T07:00:00Z'));
  // A time zone given is kept as given.
  t.deepEqual(inZone('Asia/Tokyo', () => scheduleInput('n', '0 2 * * *', { type: 'report', timezone: 'Europe/Berlin' }, NOW)).spec, { cron: '0 2 * * *', timezone: 'Europe/Berlin' });
});

test('in a process whose time zone Intl cannot name (TZ set empty, to a path or to no known zone), a cron expression is stored without one, as a spec of its own', (t) => {
  for (const zone of ['', ':/etc/localtime', 'nowhere']) {
    const input = inZone(zone, () => scheduleInput('nightly', '0 2 * * *', { type: 'report' }, NOW));
    t.deepEqual(input.spec, { cron: '0 2 * * *' }, JSON.stringify(zone));
    t.is(typeof input.nextTick, 'number', JSON.stringify(zone));
  }
});

test('a cron expression that never matches is JobsError invalid_schedule; a rare one is kept with its next tick years ahead', (t) => {
  for (const cron of ['0 0 30 2 *', '0 0 31 4 *', '0 0 31 2,4,6,9,11 *']) {
    t.throws(() => scheduleInput('never', cron, { type: 'report', timezone: 'UTC' }, NOW), { code: 'invalid_schedule', message: /never/ }, cron);
  }
  t.is(scheduleInput('leap', '0 0 29 2 *', { type: 'report', timezone: 'UTC' }, NOW).nextTick, Date.parse('2028-02-29T00:00:00Z'));
  // Day of month and day of week both restricted: either matches, as in standard cron.
  t.is(scheduleInput('either', '0 0 30 2 MON', { type: 'report', timezone: 'UTC' }, NOW).nextTick, Date.parse('2026-02-02T00:00:00Z'));
});

test('a cron expression set again without a time zone keeps the zone of the schedule it replaces, whatever the zone of the process that sets it', (t) => {
  const stored: ScheduleRecord = { ...inZone('America/New_York', () => scheduleInput('nightly', '0 2 * * *', { type: 'report' }, NOW)), setAt: NOW, lastTick: null };
  const fromTokyo = inZone('Asia/Tokyo', () => scheduleInput('nightly', '0 2 * * *', { type: 'report' }, NOW, stored));
  t.deepEqual(fromTokyo.spec, { cron: '0 2 * * *', timezone: 'America/New_York' });
  t.is(fromTokyo.nextTick, Date.parse('2026-01-10T07:00:00Z'));
  // Another expression keeps the schedule's zone too; a zone given is taken as given.
  t.deepEqual(inZone('Asia/Tokyo', () => scheduleInput('nightly', { cron: '0 3 * * *' }, { type: 'report' }, NOW, stored)).spec, { cron: '0 3 * * *', timezone: 'America/New_York' });
  t.deepEqual(inZone('Asia/Tokyo', () => scheduleInput('nightly', '0 2 * * *', { type: 'report', timezone: 'Asia/Tokyo' }, NOW, stored)).spec, { cron: '0 2 * * *', timezone: 'Asia/Tokyo' });
  // Over an interval, or a cron schedule stored with no zone, it takes the process's.
  const interval: ScheduleRecord = { ...stored, spec: { everyMs: 60_000 } };
  const zoneless: ScheduleRecord = { ...stored, spec: { cron: '0 2 * * *' } };
  for (const before of [interval, zoneless]) {
    t.deepEqual(inZone('Asia/Tokyo', () => scheduleInput('nightly', '0 2 * * *', { type: 'report' }, NOW, before)).spec, { cron: '0 2 * * *', timezone: 'Asia/Tokyo' });
  }
});

test('an interval under a second is JobsError invalid_schedule, its message naming the floor', (t) => {
  t.is(MIN_EVERY_MS, 1_000);
  for (const everyMs of [1, 10, 999]) {
    t.throws(() => scheduleInput('often', { everyMs }, { type: 'report' }, NOW), { code: 'invalid_schedule', message: new RegExp(`at least 1000 .*got ${everyMs}$`) }, `${everyMs}`);
  }
  t.is(scheduleInput('often', { everyMs: 1_000 }, { type: 'report' }, NOW).nextTick, NOW + 1_000);
});
