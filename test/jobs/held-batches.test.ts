// The batches a local queue holds: handed out oldest first, counted across
// batches, past their hold given back whole, trimmed from the newest end.

import test from 'ava';
import type { Job } from '@jobtree/core';
import { HeldBatches } from '../../packages/core/src/jobs/held-batches.js';

const jobsOf = (prefix: string, count: number): Job[] =>
  Array.from({ length: count }, (_, i) => ({ type: 't', id: `${prefix}${i}` }) as Job);
const ids = (jobs: readonly Job[]) => jobs.map((job) => job.id);

test('jobs leave oldest first across batches, and the count follows', (t) => {
  const held = new HeldBatches();
  held.push(jobsOf('a', 3), 1, 0, 1_000);
  held.push(jobsOf('b', 2), 0, 10, 1_010);
  t.is(held.count, 4);
  const out: Job[] = [];
  const none = () => t.fail('nothing is past its hold');
  held.shiftInto(held.current(5, none) as never, 3, out);
  t.deepEqual(ids(out), ['a1', 'a2']);
  held.shiftInto(held.current(5, none) as never, 1, out);
  t.deepEqual(ids(out), ['a1', 'a2', 'b0']);
  t.is(held.shift(held.current(5, none) as never).id, 'b1');
  t.is(held.count, 0);
  t.is(held.current(5, none), undefined);
});

test('batches past their hold leave whole, to be given back', (t) => {
  const held = new HeldBatches();
  held.push(jobsOf('a', 2), 0, 0, 100);
  held.push(jobsOf('b', 2), 0, 50, 150);
  const expired: string[][] = [];
  const batch = held.current(120, (jobs) => expired.push(ids(jobs)));
  t.deepEqual(expired, [['a0', 'a1']]);
  t.is(batch?.jobs[0]?.id, 'b0');
  t.is(held.count, 2);
});

test('trim keeps the oldest jobs and removes the newest, across batches', (t) => {
  const held = new HeldBatches();
  held.push(jobsOf('a', 3), 1, 0, 1_000);
  held.push(jobsOf('b', 3), 0, 10, 1_010);
  t.deepEqual(ids(held.trim(3)), ['b1', 'b2']);
  t.is(held.count, 3);
  t.deepEqual(ids(held.trim(1)), ['b0', 'a2']);
  t.deepEqual(ids(held.drain()), ['a1']);
  t.deepEqual(ids(held.trim(0)), []);
  t.is(held.count, 0);
});

test('entries list every held job with its batch time, oldest first', (t) => {
  const held = new HeldBatches();
  held.push(jobsOf('a', 2), 1, 0, 1_000);
  held.push(jobsOf('b', 1), 0, 10, 1_010);
  t.deepEqual(
    [...held.entries()].map(({ job, takenAt }) => [job.id, takenAt]),
    [
      ['a1', 0],
      ['b0', 10],
    ],
  );
});
