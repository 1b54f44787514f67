// The consistency check reads the rows of job flows too: a parent's row
// and its children rows name a parent that exists in a flow, its count of
// unfinished children is what its children's links say, a waiting parent
// has children to wait for, and a child's link says whether its end was
// counted as the child's state does. Each test breaks one row of a store
// by hand and expects that anomaly, and only that one.

import test from 'ava';
import { type ConsistencyAnomaly, checkJobsConsistency, Subspace } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

const flows = Subspace.of('jobs', 'flows');
const children = Subspace.of('jobs', 'flow_children');
const parents = Subspace.of('jobs', 'flow_parents');
const data = Subspace.of('jobs', 'data');

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

async function anomalies(jobs: Jobs): Promise<Array<Pick<ConsistencyAnomaly, 'kind' | 'type' | 'id'>>> {
  return (await checkJobsConsistency(jobs.database)).anomalies.map(({ kind, type, id }) => ({ kind, type, id }));
}

/** A parent `p` (T1) waiting for children `a` and `b` (T2), `a` finished. */
async function flowWithOneChildDone(jobs: Jobs): Promise<void> {
  await jobs.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T2, id: 'b' }] });
  let job = await jobs.accept(T2);
  while (job !== undefined && job.id !== 'a') {
    await jobs.resubmit(job);
    await jobs.finish(job);
    job = await jobs.accept(T2);
  }
  await jobs.complete(job!, 'done');
}

test('flows at every stage leave no anomaly', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.addFlow({ type: T1, id: 'q', onChildFailure: 'continue', children: [{ type: T2, id: 'c' }, { type: T2, id: 'd' }] });
  await jobs.cancel(T2, 'c');
  await jobs.addFlow({ type: T1, id: 'r', children: [{ type: T2, id: 'e' }] });
  await jobs.cancel(T1, 'r');
  t.deepEqual(await anomalies(jobs), []);
  // A parent failed by one child and pruned while its other child still waits: that child's link names a parent that is gone.
  await jobs.addFlow({ type: T1, id: 's', children: [{ type: T2, id: 'f' }, { type: T2, id: 'g' }] });
  await jobs.cancel(T2, 'f');
  t.is(await jobs.getJobState(T1, 's'), 'finished');
  // Pruned children first (their parents read them as gone), then the parents.
  await jobs.pruneFinished(T2, 'cancelled', { maxCount: 0 });
  t.deepEqual(await anomalies(jobs), []);
  await jobs.pruneFinished(T1, 'failed', { maxCount: 0 });
  await jobs.pruneFinished(T1, 'cancelled', { maxCount: 0 });
  t.is(await jobs.getJobState(T1, 's'), undefined);
  t.deepEqual(await anomalies(jobs), []);
  // A child added again once finished, while its parent waits, counts as unfinished again.
  await jobs.add(T2, 'a');
  t.like(await jobs.getFlow(T1, 'p'), { state: 'waiting', unfinished: 2 });
  t.deepEqual(await anomalies(jobs), []);
});

test("a parent's children rows and row whose parent job is missing are orphan_flow_row", async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => tx.clear(data.pack([T1, 'p'])));
  t.deepEqual(await anomalies(jobs), [
    { kind: 'orphan_flow_row', type: T1, id: 'p' },
    { kind: 'orphan_flow_row', type: T1, id: 'p' },
    { kind: 'orphan_flow_row', type: T1, id: 'p' },
  ]);
});

test('a link of a child that is missing is orphan_flow_row', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => tx.set(parents.pack([T2, 'ghost']), json({ type: T1, id: 'p', ended: true })));
  t.deepEqual(await anomalies(jobs), [{ kind: 'orphan_flow_row', type: T2, id: 'ghost' }]);
});

test("a waiting parent's count of unfinished children that its children's links do not give is flow_count_mismatch", async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => tx.set(flows.pack([T1, 'p']), json({ onChildFailure: 'fail', unfinished: 2 })));
  t.deepEqual(await anomalies(jobs), [{ kind: 'flow_count_mismatch', type: T1, id: 'p' }]);
});

test('a waiting parent with nothing left to wait for is waiting_parent_stuck', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  // Its row says no child is unfinished, and so do the links: nothing will ever release it.
  await jobs.database.doTransaction(async (tx) => {
    tx.set(flows.pack([T1, 'p']), json({ onChildFailure: 'fail', unfinished: 0 }));
    tx.set(parents.pack([T2, 'b']), json({ type: T1, id: 'p', ended: true }));
  });
  t.deepEqual(await anomalies(jobs), [
    { kind: 'flow_link_mismatch', type: T2, id: 'b' },
    { kind: 'waiting_parent_stuck', type: T1, id: 'p' },
  ]);
});

test('a waiting job without a flow row is waiting_parent_stuck', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => {
    tx.clear(flows.pack([T1, 'p']));
    const { begin, end } = children.subspace(T1, 'p').range();
    tx.clearRange(begin, end);
    tx.clear(parents.pack([T2, 'a']));
    tx.clear(parents.pack([T2, 'b']));
  });
  t.deepEqual(await anomalies(jobs), [{ kind: 'waiting_parent_stuck', type: T1, id: 'p' }]);
});

test('a finished child whose end its link does not count is flow_link_mismatch', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => {
    tx.set(parents.pack([T2, 'a']), json({ type: T1, id: 'p', ended: false }));
    tx.set(flows.pack([T1, 'p']), json({ onChildFailure: 'fail', unfinished: 2 }));
  });
  t.deepEqual(await anomalies(jobs), [{ kind: 'flow_link_mismatch', type: T2, id: 'a' }]);
});

test('a flow row that does not decode is corrupt_row', async (t) => {
  const { jobs } = await openTempJobs(t);
  await flowWithOneChildDone(jobs);
  await jobs.database.doTransaction(async (tx) => tx.set(flows.pack([T1, 'p']), json({ unfinished: 'many' })));
  t.like(await anomalies(jobs), [{ kind: 'corrupt_row', type: T1, id: 'p' }]);
});
