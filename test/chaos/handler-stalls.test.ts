// A bug the chaos run found in the scheduler (seed 444214561 of
// test/chaos/chaos.test.ts, with handler stalls): a run stopped because
// another job's handler hung its thread ("stopped: thread lost") is taken for
// a clean stop, so it ends the job's crash streak. A job whose handler hangs
// then runs again as a first attempt with no backoff; with a few such jobs
// sharing a handler thread they take turns killing it for ever, none is ever
// given up, and the jobs that share the thread never finish (bystanders are
// charged crashes after enough unexplained losses). Fixed: such a run is
// recorded as `lost`, which leaves the streak as it was.

import test from 'ava';
import { consecutiveCrashes, type HistoryEvent } from '../../packages/jobtree/src/processors/index.js';

const AT = 1_800_000_000_000;
const HEALTH_THRESHOLD_S = 120;

test('a run lost with another job\'s thread does not end the crash streak it was part of', (t) => {
  // Newest first: added, started, crashed (hung its thread), started again after
  // the backoff, lost as a bystander when another job hung the new thread, restarted.
  const history: HistoryEvent[] = [
    { type: 'started', at: AT + 4_000 },
    { type: 'lost', at: AT + 4_000, reason: 'thread lost: the handler thread made no progress for 1800 ms' },
    { type: 'started', at: AT + 3_900 },
    { type: 'crashed', at: AT + 1_900, reason: 'the handler thread made no progress for 1800 ms' },
    { type: 'started', at: AT + 100 },
    { type: 'added', at: AT },
  ];
  t.is(consecutiveCrashes(history, HEALTH_THRESHOLD_S), 1);
});

test('a clean stop of a started run does end the crash streak (what the check above must keep)', (t) => {
  const history: HistoryEvent[] = [
    { type: 'started', at: AT + 4_000 },
    { type: 'stopped', at: AT + 3_950, reason: 'rotation' },
    { type: 'started', at: AT + 3_900 },
    { type: 'crashed', at: AT + 1_900, reason: 'boom' },
    { type: 'started', at: AT + 100 },
    { type: 'added', at: AT },
  ];
  t.is(consecutiveCrashes(history, HEALTH_THRESHOLD_S), 0);
});
