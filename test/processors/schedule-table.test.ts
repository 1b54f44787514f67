// The scheduling cycle, ported from the scheduler_test_ cases of
// couch_replicator_scheduler's eunit tests (t_pending_jobs_simple to
// t_if_permanent_job_crashes_it_stays_in_ets), against the pure table.
import test from 'ava';
import {
  type HistoryEvent,
  type ScheduleEntry,
  ScheduleTable,
  SchedulerError,
} from '../../packages/jobtree/src/processors/index.js';

const added = (): HistoryEvent => ({ type: 'added', at: 0 });
const started = (s: number): HistoryEvent => ({ type: 'started', at: s * 1000 });
const stopped = (s: number): HistoryEvent => ({ type: 'stopped', at: s * 1000 });
const crashed = (at: number): HistoryEvent => ({ type: 'crashed', at, reason: 'some_reason' });

/** "Now" for the cycles: far later than every fixture event, as os:timestamp() is in the original. */
const NOW = 1_700_000_000_000;

function job(id: number, continuous: boolean, running: boolean): ScheduleEntry {
  return {
    id: String(id),
    continuous,
    running,
    held: true,
    history: running ? [started(id), added()] : [stopped(id + 1), started(id), added()],
    failures: 0,
  };
}
const oneshot = (id: number) => job(id, false, false);
const oneshotRunning = (id: number) => job(id, false, true);
const continuous = (id: number) => job(id, true, false);
const continuousRunning = (id: number) => job(id, true, true);

function setup(jobs: ScheduleEntry[], maxJobs = 500, maxChurn = 20): ScheduleTable {
  const table = new ScheduleTable({ maxJobs, maxChurn });
  for (const entry of jobs) table.insert(entry);
  return table;
}
/** Runs one cycle with other limits on the same jobs (the original passes a fresh #state each time). */
function reschedule(table: ScheduleTable, maxJobs: number, maxChurn = 20): void {
  table.configure({ maxJobs, maxChurn });
  table.reschedule(NOW);
}
const byNumber = (a: string, b: string) => Number(a) - Number(b);
const running = (table: ScheduleTable) => [...table.entries()].filter((e) => e.running).map((e) => e.id).sort(byNumber).map(Number);
const stoppedIds = (table: ScheduleTable) => [...table.entries()].filter((e) => !e.running).map((e) => e.id).sort(byNumber).map(Number);
const runStopCount = (table: ScheduleTable) => [running(table).length, stoppedIds(table).length];
const oneshotRunStopCount = (table: ScheduleTable) => {
  const oneshots = [...table.entries()].filter((e) => !e.continuous);
  return [oneshots.filter((e) => e.running).length, oneshots.filter((e) => !e.running).length];
};
const ids = (entries: ScheduleEntry[]) => entries.map((e) => Number(e.id));

test('pending jobs: the oldest started first, as many as asked', (t) => {
  const table = setup([oneshot(2), oneshot(1)]);
  t.deepEqual(ids(table.pendingJobs(0, NOW)), []);
  t.deepEqual(ids(table.pendingJobs(1, NOW)), [1]);
  t.deepEqual(ids(table.pendingJobs(2, NOW)), [1, 2]);
  t.deepEqual(ids(table.pendingJobs(3, NOW)), [1, 2]);
});

test('pending jobs: jobs never started come first in the order they were taken, then the oldest started', (t) => {
  // Never started (only `added`) and started ones interleaved, as a local queue of fresh jobs next to given-back ones.
  const fresh = (id: number): ScheduleEntry => ({ id: String(id), continuous: false, running: false, held: true, history: [added()], failures: 0 });
  const table = setup([oneshot(50), fresh(7), oneshot(20), fresh(3), fresh(9), oneshot(10)]);
  t.deepEqual(ids(table.pendingJobs(1, NOW)), [7]);
  t.deepEqual(ids(table.pendingJobs(3, NOW)), [7, 3, 9]);
  t.deepEqual(ids(table.pendingJobs(4, NOW)), [7, 3, 9, 10]);
  t.deepEqual(ids(table.pendingJobs(6, NOW)), [7, 3, 9, 10, 20, 50]);
});

test('pending jobs skip a job that crashed within its backoff', (t) => {
  const job1 = oneshot(1);
  job1.history = [crashed(NOW), { type: 'started', at: NOW }, ...job1.history];
  const table = setup([oneshot(2), job1, oneshot(3)]);
  t.deepEqual(ids(table.pendingJobs(1, NOW)), [2]);
  t.deepEqual(ids(table.pendingJobs(2, NOW)), [2, 3]);
  t.deepEqual(ids(table.pendingJobs(3, NOW)), [2, 3]);
});

test('one pending job starts', (t) => {
  const table = setup([oneshot(1)]);
  t.deepEqual(runStopCount(table), [0, 1]);
  reschedule(table, 500);
  t.deepEqual(runStopCount(table), [1, 0]);
});

test('no job starts when maxJobs is 0', (t) => {
  const table = setup([oneshot(1)]);
  reschedule(table, 0);
  t.deepEqual(runStopCount(table), [0, 1]);
});

test('one job of two starts when maxJobs is 1', (t) => {
  const table = setup([oneshot(1), oneshot(2)]);
  reschedule(table, 1);
  t.deepEqual(runStopCount(table), [1, 1]);
});

test('maxChurn does not throttle the initial start', (t) => {
  const table = setup([oneshot(1), oneshot(2)]);
  reschedule(table, 500, 0);
  t.deepEqual(runStopCount(table), [2, 0]);
});

test('excess one-shot jobs are stopped', (t) => {
  const table = setup([oneshotRunning(1), oneshotRunning(2)]);
  t.deepEqual(runStopCount(table), [2, 0]);
  reschedule(table, 1);
  t.deepEqual(runStopCount(table), [1, 1]);
  reschedule(table, 0);
  t.deepEqual(runStopCount(table), [0, 2]);
});

test('excess continuous jobs are stopped', (t) => {
  const table = setup([continuousRunning(1), continuousRunning(2)]);
  t.deepEqual(runStopCount(table), [2, 0]);
  reschedule(table, 1);
  t.deepEqual(runStopCount(table), [1, 1]);
  reschedule(table, 0);
  t.deepEqual(runStopCount(table), [0, 2]);
});

test('excess stops continuous jobs before one-shot jobs', (t) => {
  const table = setup([continuousRunning(1), oneshotRunning(2), continuousRunning(3)]);
  t.deepEqual(runStopCount(table), [3, 0]);
  t.deepEqual(oneshotRunStopCount(table), [1, 0]);
  reschedule(table, 2);
  t.deepEqual(runStopCount(table), [2, 1]);
  t.deepEqual(oneshotRunStopCount(table), [1, 0]);
  reschedule(table, 1);
  t.deepEqual(oneshotRunStopCount(table), [1, 0]);
  reschedule(table, 0);
  t.deepEqual(oneshotRunStopCount(table), [0, 1]);
});

test('excess stops the oldest started first', (t) => {
  const table = setup([continuousRunning(7), continuousRunning(4), continuousRunning(5)]);
  reschedule(table, 2);
  t.deepEqual(runStopCount(table), [2, 1]);
  t.deepEqual(stoppedIds(table), [4]);
  reschedule(table, 1);
  t.deepEqual(running(table), [7]);
});

test('pending jobs start oldest started first', (t) => {
  const table = setup([continuous(7), continuous(2), continuous(5)]);
  reschedule(table, 1);
  t.deepEqual(runStopCount(table), [1, 2]);
  t.deepEqual(running(table), [2]);
  reschedule(table, 2);
  t.deepEqual(stoppedIds(table), [7]);
});

test('nothing is stopped when nothing waits', (t) => {
  const table = setup([continuousRunning(1), continuousRunning(2)]);
  reschedule(table, 2);
  t.deepEqual(runStopCount(table), [2, 0]);
});

test('maxChurn limits the number of rotated jobs', (t) => {
  const table = setup([continuous(1), continuousRunning(2), continuous(3), continuousRunning(4)]);
  reschedule(table, 2, 1);
  t.deepEqual(stoppedIds(table), [2, 3]);
});

test('with fewer pending than running jobs, all pending jobs start', (t) => {
  const table = setup([continuous(1), continuousRunning(2), continuous(3), continuousRunning(4), continuousRunning(5)]);
  reschedule(table, 3);
  t.deepEqual(running(table), [1, 2, 5]);
});

test('with fewer running than pending jobs, every running job is swapped out', (t) => {
  const table = setup([continuous(1), continuous(2), continuous(3), continuousRunning(4), continuousRunning(5)]);
  reschedule(table, 2);
  t.deepEqual(stoppedIds(table), [3, 4, 5]);
});

test('one-shot jobs are not rotated', (t) => {
  const table = setup([oneshotRunning(1), continuous(2)]);
  reschedule(table, 1);
  t.deepEqual(running(table), [1]);
});

test('with mixed jobs only continuous ones are rotated', (t) => {
  const table = setup([continuous(1), oneshotRunning(2), continuousRunning(3)]);
  reschedule(table, 2);
  t.deepEqual(running(table), [1, 2]);
});

test('one-shot jobs get no starting priority over older continuous jobs', (t) => {
  const table = setup([continuous(1), oneshot(2), continuousRunning(3)]);
  reschedule(table, 1);
  t.deepEqual(running(table), [1]);
});

test('one-shot jobs that hold every slot keep them', (t) => {
  const table = setup([oneshotRunning(1), oneshotRunning(2), oneshot(3), continuous(4)]);
  reschedule(table, 2);
  t.deepEqual(running(table), [1, 2]);
});

test('when excess jobs are trimmed no rotation happens in the same cycle', (t) => {
  const table = setup([continuous(1), continuousRunning(2), continuousRunning(3)]);
  reschedule(table, 1);
  t.deepEqual(running(table), [3]);
});

test('a job out of attempts that crashes leaves the table', (t) => {
  const table = setup([{ id: 'job1', continuous: true, running: true, held: true, history: [added()], failures: 0 }]);
  t.is(table.size, 1);
  const result = table.crash('job1', 'failed', NOW, 1);
  t.is(result.outcome, 'failed');
  t.is(table.size, 0);
});

test('a job with attempts left that crashes stays, its crash on top of its history', (t) => {
  const table = new ScheduleTable({ maxJobs: 1, maxHistory: 3 });
  table.insert({ id: 'job1', continuous: true, running: true, held: true, history: [added()], failures: 0 });
  const result = table.crash('job1', 'failed', NOW);
  t.is(result.outcome, 'retry');
  t.is(table.size, 1);
  const latest = table.get('job1')?.history[0];
  t.is(latest?.type, 'crashed');
  t.is(latest?.reason, 'failed');
  t.false(table.get('job1')?.running);
});

test('a crash right after a start waits 30 s, the next one 60 s', (t) => {
  const table = new ScheduleTable();
  table.add('a', false, NOW);
  table.start('a', NOW);
  t.is(table.crash('a', 'boom', NOW + 1000).backoffMs, 30_000);
  t.deepEqual(table.fill(NOW + 29_000), [], 'held back by its backoff');
  t.deepEqual(table.fill(NOW + 31_000), ['a']);
  t.is(table.crash('a', 'boom', NOW + 32_000).backoffMs, 60_000);
});

test('options are validated with typed errors', (t) => {
  for (const options of [{ maxJobs: -1 }, { maxChurn: 1.5 }, { interval: 0 }, { maxHistory: 0 }, { healthThreshold: Number.NaN }]) {
    const error = t.throws(() => new ScheduleTable(options), { instanceOf: SchedulerError });
    t.is(error?.code, 'invalid_option');
  }
  t.deepEqual(new ScheduleTable().options, { maxJobs: 500, maxChurn: 20, interval: 60_000, maxHistory: 20, healthThreshold: 120 });
});

test('stats count and age pending, running and crashed jobs', (t) => {
  const table = new ScheduleTable();
  table.add('p', false, NOW - 10_000);
  table.add('r', false, NOW - 10_000);
  table.start('r', NOW - 4_000);
  table.add('c', false, NOW - 10_000);
  table.start('c', NOW - 8_000);
  table.crash('c', 'boom', NOW - 6_000);
  t.deepEqual(table.stats(NOW), {
    total: 3,
    pending: 1,
    running: 1,
    crashed: 1,
    averageAgeSeconds: { pending: 10, running: 4, crashed: 6 },
  });
});

test('a job given back is not started by the table until it is held again', (t) => {
  const table = new ScheduleTable();
  table.add('a', true, NOW);
  table.release('a');
  t.deepEqual(table.fill(NOW), []);
  t.is(table.pendingCount, 0);
  table.add('a', true, NOW + 1);
  t.deepEqual(table.fill(NOW + 1), ['a']);
  t.deepEqual(table.get('a')?.history.map((event) => event.type), ['started', 'added'], 'one history across the round trip');
});

test('jobs given back long ago are forgotten, held ones never', (t) => {
  const table = new ScheduleTable();
  table.add('kept', false, NOW);
  table.add('gone', false, NOW);
  table.release('gone');
  t.deepEqual(table.forget(NOW + 60_000), []);
  t.deepEqual(table.forget(NOW + 11 * 60_000), ['gone']);
  t.is(table.size, 1);
});

test('a job new to the table started at once is the entry that adding it and a fill would start', (t) => {
  const viaFill = new ScheduleTable({ maxJobs: 2 });
  viaFill.add('a', true, NOW, 3);
  const [filled] = viaFill.fillEntries(NOW);
  const atOnce = new ScheduleTable({ maxJobs: 2 });
  const entry = atOnce.addStarted('a', true, NOW, 3);
  t.deepEqual(entry, filled);
  t.is(atOnce.get('a'), entry);
  t.deepEqual([atOnce.runningCount, atOnce.pendingCount], [viaFill.runningCount, viaFill.pendingCount]);
  t.deepEqual(new ScheduleTable({ maxJobs: 2, maxHistory: 1 }).addStarted('b', false, NOW)?.history, [{ type: 'started', at: NOW }]);
});

test('a job is not started at once without a free slot, while a held job waits to start, or when the table knows it', (t) => {
  const full = new ScheduleTable({ maxJobs: 1 });
  full.addStarted('a', false, NOW);
  t.is(full.addStarted('b', false, NOW), undefined);
  const waiting = new ScheduleTable({ maxJobs: 2 });
  waiting.add('a', false, NOW);
  t.is(waiting.addStarted('b', false, NOW), undefined);
  const known = new ScheduleTable({ maxJobs: 2 });
  known.insert({ id: 'a', continuous: false, running: false, held: false, history: [stopped(2), started(1), added()], failures: 0 });
  t.is(known.addStarted('a', false, NOW), undefined);
  t.deepEqual([full.size, waiting.size, known.size], [1, 1, 1]);
  t.deepEqual([full.runningCount, waiting.runningCount, known.runningCount], [1, 0, 0]);
  t.is(waiting.pendingCount, 1);
  t.is(known.get('a')?.history.length, 3);
});
