// Runs queued ahead in the lanes, as the scheduler accounts them: a queued
// run is a held job outside the schedule table, takes a slot only when its
// lane starts it, and one that comes back unstarted never ran: a cancelled
// job stays dropped, a stopping scheduler gives the job back, an active one
// holds it for its next free slot. A slot left free while runs wait queued
// asks them back.
import test from 'ava';
import type { Job, LocalQueue } from '@jobtree/core';
import { systemClock } from '../../packages/jobtree/src/clock.js';
import type { HandlerRunner } from '../../packages/jobtree/src/processors/handler-runner.js';
import { type Held, HeldJobs } from '../../packages/jobtree/src/processors/held-jobs.js';
import type { LaneRun } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { resolveProcessorOptions, schedulerSettings } from '../../packages/jobtree/src/processors/processor-options.js';
import { RunsAhead } from '../../packages/jobtree/src/processors/runs-ahead.js';
import { ScheduleTable } from '../../packages/jobtree/src/processors/schedule-table.js';
import { eventually } from './scheduler-harness.js';

const job = (id: string, continuous = false): Job =>
  ({ type: 'ahead', id, lock: 'l', data: null, priority: 0, scheduledTime: 0, resubmit: false, continuous, attempts: 0 }) as Job;

/** RunsAhead over a real table and held jobs, a local queue holding `spare`, and lanes that take `room` runs. */
function setUp(spare: Job[], room = 10) {
  const settings = schedulerSettings(resolveProcessorOptions({ maxJobs: 2, clock: systemClock }), 30_000);
  const table = new ScheduleTable(settings);
  const held = new HeldJobs(systemClock);
  const queue = {
    get held() {
      return spare.length;
    },
    takeReady: (max: number) => spare.splice(0, max),
  } as unknown as LocalQueue;
  const queued: LaneRun[] = [];
  let recalls = 0;
  const pool = {
    aheadRoom: () => room,
    runAhead: (runs: readonly LaneRun[]) => queued.push(...runs),
    recall: () => recalls++,
  } as unknown as HandlerRunner;
  const begun: string[] = [];
  const givenBack: string[] = [];
  let pumps = 0;
  let active = true;
  const ahead = new RunsAhead({
    settings,
    table,
    held,
    queue,
    pool: () => pool,
    active: () => active,
    begin: (one: Held) => begun.push(one.job.id),
    giveBack: (one: Held) => {
      givenBack.push(one.job.id);
      held.delete(one.job.id);
    },
    requestPump: () => pumps++,
    runOver: () => {},
  });
  return {
    ahead,
    table,
    held,
    queued,
    begun,
    givenBack,
    recalls: () => recalls,
    pumps: () => pumps,
    stop: () => {
      active = false;
    },
  };
}

test('spare jobs go ahead as runs held outside the table: none takes a slot or is reported started', (t) => {
  const s = setUp([job('a'), job('b'), job('c')], 2);
  s.ahead.queue();
  t.deepEqual(
    s.queued.map((run) => run.job.id),
    ['a', 'b'],
  );
  t.is(s.table.runningCount, 0);
  t.is(s.table.get('a'), undefined);
  t.true(s.held.get('a')?.queued);
  t.deepEqual(s.begun, []);
});

test('a queued run that its lane starts takes a slot, as running, with its start reported', (t) => {
  const s = setUp([job('a')]);
  s.ahead.queue();
  const serial = s.queued[0]?.serial as number;
  s.ahead.started(serial);
  t.true(s.table.get('a')?.running);
  t.is(s.table.runningCount, 1);
  t.deepEqual(s.begun, ['a']);
  t.false(s.held.get('a')?.queued);
});

test('continuous jobs do not go ahead: the table starts them into a free slot', (t) => {
  const s = setUp([job('forever', true)]);
  s.ahead.queue();
  t.deepEqual(s.queued, []);
  t.is(s.table.pendingCount, 1);
});

test('a job cancelled while its run is queued never starts: it stays dropped when its run comes back, or starts', (t) => {
  const s = setUp([job('a'), job('b')]);
  s.ahead.queue();
  const [a, b] = s.queued.map((run) => run.serial) as [number, number];
  // What a cancel does to a held job (Heartbeats.cancel).
  for (const id of ['a', 'b']) {
    s.held.delete(id);
    s.table.remove(id);
  }
  s.ahead.returned(a);
  s.ahead.started(b);
  t.is(s.table.get('a'), undefined);
  t.is(s.table.get('b'), undefined);
  t.deepEqual(s.begun, []);
  t.deepEqual(s.givenBack, []);
  t.is(s.held.get('a'), undefined);
});

test('a run returned unstarted (its thread died) is held for the next free slot, never reported started', (t) => {
  const s = setUp([job('a')]);
  s.ahead.queue();
  s.ahead.returned(s.queued[0]?.serial as number);
  t.is(s.table.pendingCount, 1);
  t.false(s.table.get('a')?.running);
  t.is(s.held.get('a')?.serial, undefined);
  t.deepEqual(s.begun, []);
  t.true(s.pumps() > 0);
});

test('a stopping scheduler gives back the jobs whose runs come back unstarted', (t) => {
  const s = setUp([job('a')]);
  s.ahead.queue();
  s.stop();
  s.ahead.returned(s.queued[0]?.serial as number);
  t.deepEqual(s.givenBack, ['a']);
  t.deepEqual(s.begun, []);
});

test('a slot left free with nothing held while runs wait queued asks them back', async (t) => {
  const s = setUp([job('a')]);
  s.ahead.queue();
  t.is(s.recalls(), 0);
  s.ahead.queue();
  await eventually(() => s.recalls() === 1, 5_000, 5);
  s.ahead.started(s.queued[0]?.serial as number);
  s.ahead.queue();
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.is(s.recalls(), 1, 'nothing queued, nothing asked back');
});
