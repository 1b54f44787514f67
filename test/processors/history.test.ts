// The history arithmetic of the scheduler, ported from the eunit tests of
// couch_replicator_scheduler (times in the tables are seconds).
import test from 'ava';
import {
  BACKOFF_BASE_MS,
  type HistoryEvent,
  backoffMs,
  consecutiveCrashes,
  lastStarted,
  latestCrashTime,
  oldestJobFirst,
  withEvent,
} from '../../packages/jobtree/src/processors/index.js';

const added = (): HistoryEvent => ({ type: 'added', at: 0 });
const started = (s = 0): HistoryEvent => ({ type: 'started', at: s * 1000 });
const stopped = (s = 0): HistoryEvent => ({ type: 'stopped', at: s * 1000 });
const crashed = (s = 0): HistoryEvent => ({ type: 'crashed', at: s * 1000, reason: 'some_reason' });

test('backoff doubles per consecutive crash from 30 s and stops growing at 2^10', (t) => {
  const table: [number, number][] = [
    [1, 1], [2, 2], [4, 3], [8, 4], [16, 5], [32, 6], [64, 7], [128, 8], [256, 9], [512, 10], [1024, 11], [1024, 12],
  ];
  for (const [factor, crashes] of table) t.is(backoffMs(crashes), factor * BACKOFF_BASE_MS, `${crashes} crashes`);
  t.is(backoffMs(0), 0, 'no crash, no wait');
});

test('consecutive crashes are counted within the default health threshold', (t) => {
  const table: [number, HistoryEvent[]][] = [
    [0, []],
    [0, [added()]],
    [0, [stopped()]],
    [0, [crashed()]],
    [1, [crashed(), added()]],
    [1, [crashed(), crashed()]],
    [1, [crashed(), stopped()]],
    [3, [crashed(), crashed(), crashed(), added()]],
    [2, [crashed(), crashed(), stopped()]],
    [1, [crashed(), started(), added()]],
    [2, [crashed(3), started(2), crashed(1), started(0)]],
    [0, [stopped(3), started(2), crashed(1), started(0)]],
    [1, [crashed(3), started(2), stopped(1), started(0)]],
    [0, [crashed(999), started(0)]],
    [1, [crashed(999), started(998), crashed(997), started(0)]],
  ];
  for (const [expected, history] of table) {
    t.is(consecutiveCrashes(history, 120), expected, JSON.stringify(history));
  }
});

test('a crash later than a non-default health threshold after the start does not count', (t) => {
  t.is(consecutiveCrashes([crashed(11), started(0)], 10), 0);
  t.is(consecutiveCrashes([crashed(10), started(0)], 10), 1);
});

test('the latest crash timestamp is the newest crash in the history', (t) => {
  const table: [number, HistoryEvent[]][] = [
    [0, [added()]],
    [1, [crashed(1)]],
    [3, [crashed(3), started(2), crashed(1), started(0)]],
    [1, [started(3), stopped(2), crashed(1), started(0)]],
  ];
  for (const [seconds, history] of table) t.is(latestCrashTime(history), seconds * 1000);
});

test('last started is the newest start in the history, 0 when never started', (t) => {
  const table: [number, HistoryEvent[]][] = [
    [0, [added()]],
    [0, [crashed(1)]],
    [1, [started(1)]],
    [1, [added(), started(1)]],
    [2, [started(2), started(1)]],
    [2, [crashed(3), started(2), started(1)]],
  ];
  for (const [seconds, history] of table) t.is(lastStarted(history), seconds * 1000);
});

test('sorting oldest job first puts never-started jobs, then the earliest starts, in front', (t) => {
  const j0 = { history: [crashed()] };
  const j1 = { history: [started(1)] };
  const j2 = { history: [started(2)] };
  const sort = (jobs: (typeof j0)[]) => [...jobs].sort(oldestJobFirst);
  t.deepEqual(sort([]), []);
  t.deepEqual(sort([j1]), [j1]);
  t.deepEqual(sort([j2, j1]), [j1, j2]);
  t.deepEqual(sort([j2, j1, j0]), [j0, j1, j2]);
});

test('a history keeps only the newest maxHistory events', (t) => {
  let history: HistoryEvent[] = [added()];
  for (let s = 1; s <= 5; s++) history = withEvent(history, started(s), 3);
  t.deepEqual(history, [started(5), started(4), started(3)]);
});
