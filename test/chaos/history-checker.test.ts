// The chaos checker is not vacuous: given a history and a store that show a
// lost job, a double finish, a result nobody sent, a hung subscriber or a
// resurrected job, it reports each; a clean history gives no anomaly.

import test from 'ava';
import type { JobInfo } from '@jobtree/core';
import type { HistoryEntry } from './history.js';
import { checkHistory } from './history-checker.js';

const T = 'x';
let clock = 0;
const at = (entry: Omit<HistoryEntry, 't'>): HistoryEntry => ({ t: ++clock, ...entry });
const info = (id: string, state: JobInfo['state'], data: JobInfo['data'] = null): JobInfo => ({
  type: T,
  id,
  state,
  data,
  priority: 0,
  scheduledTime: 0,
  resubmit: false,
  continuous: false,
  attempts: 0,
});

/** add ok, accept with `lock`, finish ok with the lock as result. */
function ranOnce(id: string, lock: string): HistoryEntry[] {
  return [
    at({ op: 'add', phase: 'invoke', type: T, id }),
    at({ op: 'add', phase: 'ok', type: T, id }),
    at({ op: 'accept', phase: 'ok', type: T, id, lock }),
    at({ op: 'finish', phase: 'invoke', type: T, id, lock }),
    at({ op: 'finish', phase: 'ok', type: T, id, lock, state: 'finished' }),
  ];
}

const kinds = (anomalies: ReturnType<typeof checkHistory>) => anomalies.map((anomaly) => `${anomaly.kind} ${anomaly.id}`);

test('a clean history: added, re-enqueued after a crash, finished once by the second acceptance', (t) => {
  const history = [
    ...ranOnce('a', 'L1'),
    at({ op: 'add', phase: 'ok', type: T, id: 'b' }),
    at({ op: 'accept', phase: 'ok', type: T, id: 'b', lock: 'L2' }),
    at({ op: 'finish', phase: 'invoke', type: T, id: 'b', lock: 'L2' }), // its worker died here, unanswered
    at({ op: 'accept', phase: 'ok', type: T, id: 'b', lock: 'L3' }),
    at({ op: 'finish', phase: 'invoke', type: T, id: 'b', lock: 'L3' }),
    at({ op: 'finish', phase: 'ok', type: T, id: 'b', lock: 'L3', state: 'finished' }),
  ];
  t.deepEqual(checkHistory({ history, jobs: [info('a', 'finished', { token: 'L1' }), info('b', 'finished', { token: 'L3' })], drained: true }), []);
});

test('an acknowledged add missing from the store is lost; a job left pending after the drain is not finished', (t) => {
  const history = [...ranOnce('a', 'L1'), at({ op: 'add', phase: 'ok', type: T, id: 'b' })];
  t.deepEqual(kinds(checkHistory({ history, jobs: [info('b', 'pending')], drained: true })), ['lost a', 'not_finished b']);
});

test('two successful finishes of one job, and a result the store holds that another finish sent, are reported', (t) => {
  const history = [
    ...ranOnce('a', 'L1'),
    at({ op: 'accept', phase: 'ok', type: T, id: 'a', lock: 'L2' }),
    at({ op: 'finish', phase: 'invoke', type: T, id: 'a', lock: 'L2' }),
    at({ op: 'finish', phase: 'ok', type: T, id: 'a', lock: 'L2', state: 'finished' }),
  ];
  t.deepEqual(kinds(checkHistory({ history, jobs: [info('a', 'finished', { token: 'L2' })], drained: true })), ['finished_twice a']);
  const once = ranOnce('b', 'L3');
  once.splice(3, 0, at({ op: 'finish', phase: 'invoke', type: T, id: 'b', lock: 'L9' }));
  t.deepEqual(kinds(checkHistory({ history: once, jobs: [info('b', 'finished', { token: 'L9' })], drained: true })), ['foreign_result b']);
  t.deepEqual(kinds(checkHistory({ history: ranOnce('c', 'L4'), jobs: [info('c', 'finished', { token: 'nobody' })], drained: true })), ['foreign_result c']);
});

test('a job acknowledged as removed that is in the store is resurrected; a job nobody added is a phantom', (t) => {
  const history = [...ranOnce('a', 'L1'), at({ op: 'remove', phase: 'invoke', type: T, id: 'a' }), at({ op: 'remove', phase: 'ok', type: T, id: 'a', state: 'removed' })];
  t.deepEqual(kinds(checkHistory({ history, jobs: [info('a', 'finished', { token: 'L1' }), info('z', 'pending')], drained: false })), ['resurrected a', 'phantom z']);
});

test('a subscription with neither a terminal event nor an error is a hang; one that ended is not', (t) => {
  const history = [
    ...ranOnce('a', 'L1'),
    at({ op: 'subscribe', phase: 'ok', type: T, id: 'a', sub: 1, state: 'running' }),
    at({ op: 'subscribe', phase: 'ok', type: T, id: 'a', sub: 2, state: 'running' }),
    at({ op: 'sub_end', phase: 'ok', type: T, id: 'a', sub: 2, state: 'finished' }),
    at({ op: 'subscribe', phase: 'ok', type: T, id: 'a', sub: 3, state: 'pending' }),
    at({ op: 'sub_end', phase: 'fail', type: T, id: 'a', sub: 3, error: 'unavailable' }),
    at({ op: 'subscribe', phase: 'ok', type: T, id: 'a', sub: 4, state: 'running' }),
    at({ op: 'sub_end', phase: 'ok', type: T, id: 'a', sub: 4, state: 'not_found' }),
  ];
  t.deepEqual(kinds(checkHistory({ history, jobs: [info('a', 'finished', { token: 'L1' })], drained: true })), ['subscriber_hang a', 'wrong_terminal a']);
});
