// Guarantees of the jobs hot path (accept, finish and update, the local
// queue) that speed work can break without the jobs suites noticing: a job
// handed out is a plain object whose data is its own and stays as it was
// read; an accept that read a record another commit changed retries rather
// than write the old one back; every job is handed out exactly once, best
// first, within the accept's byte budget, with stale queue entries dropped;
// a batch of finishes halts only its stale job; and every call resolves only
// once what it wrote is durable (a fresh transaction reads it at once).

import test from 'ava';
import { checkJobsConsistency, JobsError, LocalQueue, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { ParkedAccepts } from '../../packages/core/src/jobs/parked-accepts.js';
import { EmbeddedTransaction } from '../../packages/core/src/storage/embedded/embedded-transaction.js';
import { nowSeconds, openTempJobs, T1, T2 } from './temp-jobs.js';
import { deferred } from '../deferred.js';

async function assertConsistent(t: { deepEqual(a: unknown, b: unknown, m?: string): void }, jobs: Jobs): Promise<void> {
  const report = await checkJobsConsistency(jobs.database);
  t.deepEqual(report.anomalies, [], 'the jobs keyspace is consistent');
}

/** Whether every own property of `value` is a plain data property (no getter a structured clone or a spread would lose). */
function isPlainData(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(value))) {
    if (!('value' in descriptor) || !descriptor.enumerable) return false;
  }
  return true;
}

function expectedJob(job: Job, data: unknown): Record<string, unknown> {
  return {
    type: job.type,
    id: job.id,
    lock: job.lock,
    data,
    priority: job.priority,
    scheduledTime: job.scheduledTime,
    resubmit: job.resubmit,
    continuous: job.continuous,
    attempts: job.attempts,
  };
}

// --- the Job object --------------------------------------------------------

test('a job from accept, acceptMany, update, a hand-over or a local queue is a plain object that structuredClone, JSON and spread copy whole', async (t) => {
  const { jobs } = await openTempJobs(t);
  const data = { name: 'plain', nested: { list: [1, 2, 3] } };
  await jobs.addMany(T1, [
    { id: 'a', data },
    { id: 'b', data },
    { id: 'c', data },
  ]);
  const single = (await jobs.accept(T1)) as Job;
  const many = await jobs.acceptMany(T1, 2);
  const updated = await jobs.update(single, { name: 'updated' });
  const waiting = jobs.accept(T2, { timeout: 30_000 });
  // The accept parks; an add of its type hands the job over in its own transaction (or its watch serves it).
  await new Promise((resolve) => setTimeout(resolve, 300));
  await jobs.add(T2, 'handed', data);
  const handed = (await waiting) as Job;
  await jobs.addMany(T2, [{ id: 'q1', data }, { id: 'q2', data }]);
  const queue = new LocalQueue<string>(jobs, T2, { size: 4 });
  const queued = (await queue.take()) as Job;
  const cases: Array<[string, Job, unknown]> = [
    ['accept', single, data],
    ['acceptMany', many[0] as Job, data],
    ['acceptMany', many[1] as Job, data],
    ['update', updated, { name: 'updated' }],
    ['hand-over', handed, data],
    ['local queue', queued, data],
  ];
  for (const [source, job, expected] of cases) {
    t.true(isPlainData(job), `${source}: a plain object of data properties`);
    const want = expectedJob(job, expected);
    t.deepEqual(structuredClone(job), want, `${source}: structuredClone`);
    t.deepEqual(JSON.parse(JSON.stringify(job)), want, `${source}: JSON`);
    t.deepEqual({ ...job }, want, `${source}: spread`);
    t.deepEqual(Object.keys(job).sort(), Object.keys(want).sort(), `${source}: own keys`);
  }
  await queue.stop();
});

test('jobs with equal data each get their own data object: changing one changes no other job, no later accept and not the store', async (t) => {
  const { jobs } = await openTempJobs(t);
  const specs = Array.from({ length: 6 }, (_, i) => ({ id: `same-${i}`, data: { n: 1, list: [1], text: 'x'.repeat(40) } }));
  await jobs.addMany(T1, specs);
  const first = await jobs.acceptMany(T1, 3);
  const changed = (first[0] as Job).data as { n: number; list: number[] };
  changed.n = 99;
  changed.list.push(2);
  t.deepEqual(first[1]?.data, { n: 1, list: [1], text: 'x'.repeat(40) });
  t.deepEqual(first[2]?.data, { n: 1, list: [1], text: 'x'.repeat(40) });
  const later = await jobs.acceptMany(T1, 3);
  for (const job of later) t.deepEqual(job.data, { n: 1, list: [1], text: 'x'.repeat(40) });
  // Finishing without data keeps what the store holds, not what the worker's object became.
  await jobs.finish(first[0] as Job);
  t.deepEqual(await jobs.getJobData(T1, (first[0] as Job).id), { n: 1, list: [1], text: 'x'.repeat(40) });
});

test("a job's data read long after its accept is the data it was accepted with, whatever was written and accepted since", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'early', { word: 'early', pad: 'e'.repeat(300) });
  const early = (await jobs.accept(T1)) as Job;
  // Many more jobs, of other data of the same length, accepted, updated and finished without reading `early.data`.
  await jobs.addMany(
    T1,
    Array.from({ length: 300 }, (_, i) => ({ id: `later-${i}`, data: { word: `w${String(i).padStart(3, '0')}`.padEnd(5, '-'), pad: 'z'.repeat(300) } })),
  );
  const queue = new LocalQueue<string>(jobs, T1, { size: 50 });
  for (let i = 0; i < 300; i++) {
    const job = (await queue.take()) as Job;
    if (i % 7 === 0) await jobs.update(job, { word: 'upd', pad: 'u'.repeat(300) });
    else void queue.finish(job);
  }
  await queue.stop();
  await jobs.update(early, { word: 'changed', pad: 'c'.repeat(300) });
  t.deepEqual(early.data, { word: 'early', pad: 'e'.repeat(300) });
});

test("update resolves with a new handle and leaves the caller's handle as it was", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'u', { v: 1 });
  const job = (await jobs.accept(T1)) as Job;
  const before = structuredClone(job);
  await jobs.resubmit(T1, 'u');
  const updated = await jobs.update(job, { v: 2 });
  t.not(updated, job);
  t.deepEqual(structuredClone(job), before);
  t.deepEqual(updated.data, { v: 2 });
  t.true(updated.resubmit);
});

// --- accepts and concurrent writes ----------------------------------------

/**
 * Holds the next transaction commit made after `arm()` until `release()`:
 * the attempt has read and written, and waits to be resolved.
 */
function holdNextCommit(t: { teardown(fn: () => void): void }) {
  const commit = EmbeddedTransaction.prototype.commit;
  t.teardown(() => {
    EmbeddedTransaction.prototype.commit = commit;
  });
  let armed = false;
  const { promise: held, resolve: reached } = deferred();
  const { promise: gate, resolve: release } = deferred();
  EmbeddedTransaction.prototype.commit = function (this: EmbeddedTransaction) {
    if (!armed) return commit.call(this);
    armed = false;
    reached();
    return gate.then(() => commit.call(this));
  };
  return {
    arm() {
      armed = true;
    },
    held,
    release,
  };
}

test.serial("an accept whose job's data changed after it read the record retries, and the worker gets what the store holds", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'racy', { v: 1 });
  const hold = holdNextCommit(t);
  hold.arm();
  const accepting = jobs.accept(T1);
  await hold.held;
  // The accept has read the pending record; its data changes (same priority and time: only the record is written).
  t.is(await jobs.add(T1, 'racy', { v: 2 }), 'pending');
  hold.release();
  const job = (await accepting) as Job;
  t.is(job?.id, 'racy');
  t.deepEqual(await jobs.getJobData(T1, 'racy'), { v: 2 }, 'the add that resolved is not overwritten');
  t.deepEqual(job.data, { v: 2 }, 'the worker gets the data the store holds');
  await assertConsistent(t, jobs);
});

test.serial('a finish that read the record before it was re-enqueued and taken again does not commit over the new owner', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'f', { v: 1 });
  const owner = (await jobs.accept(T1)) as Job;
  const hold = holdNextCommit(t);
  hold.arm();
  const finishing = jobs.finish(owner);
  await hold.held;
  // Meanwhile the job is taken from the owner: removed and added again, and accepted by another worker.
  const other = await openJobs({ database: jobs.database });
  t.teardown(() => other.close());
  t.true(await other.remove(T1, 'f'));
  await other.add(T1, 'f', { v: 3 });
  const next = (await other.accept(T1)) as Job;
  t.is(next.id, 'f');
  hold.release();
  const error = await t.throwsAsync(finishing);
  t.true(JobsError.is(error, 'halt'), String(error));
  t.is(await jobs.getJobState(T1, 'f'), 'running');
  t.is(await other.finish(next), 'finished');
  await assertConsistent(t, jobs);
});

// --- exactly once, best first ------------------------------------------------

test('concurrent accepts of two handles, single and batched, hand every job out exactly once', async (t) => {
  const { jobs } = await openTempJobs(t);
  const other = await openJobs({ database: jobs.database });
  t.teardown(() => other.close());
  const total = 1_500;
  await jobs.addMany(
    T1,
    Array.from({ length: total }, (_, i) => ({ id: `job-${i}`, data: { i }, priority: i % 3 })),
  );
  const seen = new Map<string, number>();
  let finished = 0;
  // Everyone works until every job is finished (or a generous deadline passes, when something is lost).
  const deadline = Date.now() + 60_000;
  const done = () => finished >= total || Date.now() > deadline;
  const queues: Array<LocalQueue<string>> = [];
  const workers: Promise<void>[] = [];
  for (const handle of [jobs, other]) {
    for (let w = 0; w < 6; w++) {
      workers.push(
        (async () => {
          while (!done()) {
            const one = w % 2 === 0 ? undefined : await handle.accept<string>(T1);
            const batch: Job[] = w % 2 === 0 ? await handle.acceptMany<string>(T1, 1 + (w % 5) * 7) : one === undefined ? [] : [one];
            if (batch.length === 0) {
              // The rest may be held by the local queues, or in flight.
              await new Promise((resolve) => setTimeout(resolve, 5));
              continue;
            }
            for (const job of batch) {
              seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
              t.deepEqual(job.data, { i: Number(job.id.slice(4)) });
            }
            const outcomes = await handle.finishMany(batch.map((job) => ({ job })));
            for (const outcome of outcomes) {
              t.is(outcome.status, 'fulfilled');
              if (outcome.status === 'fulfilled') finished += 1;
            }
          }
        })(),
      );
    }
    const queue = new LocalQueue<string>(handle, T1, { size: 40 });
    queues.push(queue);
    workers.push(
      (async () => {
        for (;;) {
          const job = await queue.take();
          if (job === undefined) return;
          seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
          if ((await queue.finish(job)) === 'finished') finished += 1;
        }
      })(),
    );
  }
  // The queues stop (their waiting takes resolve undefined) once the work is done.
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
  await Promise.all(queues.map((queue) => queue.stop()));
  await Promise.all(workers);
  const twice = [...seen].filter(([, count]) => count > 1);
  t.is(seen.size, total, 'every job was handed out');
  t.true(twice.length <= 0 || twice.every(([id]) => id === ''), `handed out twice: ${twice.slice(0, 5).map(([id]) => id).join(', ')}`);
  const report = await checkJobsConsistency(jobs.database);
  t.deepEqual(report.anomalies, []);
  t.is(report.states.finished, total);
});

test('acceptMany takes the best due jobs first: higher priority, then older scheduled time, none scheduled later', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = nowSeconds();
  const specs = Array.from({ length: 90 }, (_, i) => ({
    id: `r-${i}`,
    priority: (i * 7) % 4,
    scheduledTime: i % 9 === 0 ? now + 3_600 : now - ((i * 13) % 5),
  }));
  await jobs.addMany(T1, specs);
  const rank = (spec: { priority: number; scheduledTime: number }) => [-spec.priority, spec.scheduledTime] as const;
  const due = specs.filter((spec) => spec.scheduledTime <= now);
  const sorted = [...due].sort((a, b) => rank(a)[0] - rank(b)[0] || rank(a)[1] - rank(b)[1]);
  const taken: Job[] = [];
  for (const size of [25, 10, 1, 30]) {
    const batch = await jobs.acceptMany(T1, size);
    const expected = sorted.slice(taken.length, taken.length + size);
    t.deepEqual(
      batch.map((job) => `${job.priority}@${job.scheduledTime}`).sort(),
      expected.map((spec) => `${spec.priority}@${spec.scheduledTime}`).sort(),
      `batch of ${size}: the ranks of the best jobs left`,
    );
    taken.push(...batch);
  }
  const rest = await jobs.acceptMany(T1, 100);
  t.is(taken.length + rest.length, due.length, 'every due job, and no job scheduled later');
  t.true(rest.every((job) => job.scheduledTime <= now));
  const later = await jobs.acceptMany(T1, 100, { noSchedule: true });
  t.is(later.length, specs.length - due.length);
  await assertConsistent(t, jobs);
});

test('accepts of equal-rank jobs pick at random among the front of the queue', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = nowSeconds() - 10;
  await jobs.addMany(
    T1,
    Array.from({ length: 64 }, (_, i) => ({ id: `eq-${String(i).padStart(2, '0')}`, scheduledTime: now })),
  );
  const order: string[] = [];
  for (let i = 0; i < 12; i++) order.push(((await jobs.accept(T1)) as Job).id);
  // In key order, the accepts would have taken eq-00, eq-01, ...: with 32 candidates each time that is about 1 in 10^17.
  t.notDeepEqual(order, order.slice().sort(), `picked: ${order.join(' ')}`);
  t.is(new Set(order).size, order.length);
});

test('an accept of jobs with large records stops at its byte budget instead of growing past the transaction limit, and the rest are taken later', async (t) => {
  const { jobs } = await openTempJobs(t);
  const total = 115;
  // About 10.3 MB of job data in all: more than one transaction may write.
  const payload = 'p'.repeat(90_000);
  await jobs.addMany(
    T1,
    Array.from({ length: total }, (_, i) => ({ id: `big-${i}`, data: { i, payload } })),
  );
  const seen = new Set<string>();
  let batches = 0;
  for (;;) {
    const batch = await jobs.acceptMany(T1, 1_000);
    if (batch.length === 0) break;
    batches += 1;
    t.true(batch.length < total, `a batch of ${batch.length} jobs stayed within the budget`);
    for (const job of batch) {
      t.false(seen.has(job.id), `${job.id} handed out twice`);
      seen.add(job.id);
      t.is((job.data as { payload: string }).payload.length, payload.length);
    }
    await jobs.finishMany(batch.map((job) => ({ job })));
  }
  t.is(seen.size, total);
  t.true(batches >= 5, `${batches} batches`);
  await assertConsistent(t, jobs);
});

test('a stale queue entry of a job is dropped by the accept that meets it, and the job is handed out once', async (t) => {
  const { jobs } = await openTempJobs(t);
  const keys = new JobKeys().forType(T1);
  const now = nowSeconds() - 5;
  await jobs.add(T1, 'stale', { s: 1 }, { priority: 1, scheduledTime: now });
  await jobs.addMany(T1, [{ id: 'other-1', priority: 1, scheduledTime: now }, { id: 'other-2', priority: 0, scheduledTime: now }]);
  // Entries the job's record does not match: a better priority, and the same priority at another time.
  await jobs.database.doTransaction((tx) => {
    tx.set(keys.pendingKey(5, now, 'stale'), Buffer.alloc(0));
    tx.set(keys.pendingKey(1, now - 100, 'stale'), Buffer.alloc(0));
  });
  const batch = await jobs.acceptMany(T1, 10);
  t.deepEqual(batch.map((job) => job.id).sort(), ['other-1', 'other-2', 'stale']);
  const stale = batch.find((job) => job.id === 'stale') as Job;
  t.is(stale.priority, 1);
  t.is(stale.scheduledTime, now);
  t.deepEqual(await jobs.acceptMany(T1, 10), []);
  const left = await jobs.database.doTransaction((tx) => tx.getRange(keys.pending.range().begin, keys.pending.range().end));
  t.deepEqual(left, [], 'no queue entry is left behind');
  await assertConsistent(t, jobs);
});

// --- the lock check of batched finishes and updates -------------------------

test('finishes and updates that share a transaction: the stale job gets halt, the others commit', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 8 }, (_, i) => ({ id: `l-${i}`, data: { i } })),
  );
  const taken = await jobs.acceptMany(T1, 8);
  t.is(taken.length, 8);
  const [staleFinish, staleUpdate, ...rest] = taken as [Job, Job, ...Job[]];
  // Two jobs are taken from their worker: re-enqueued (resubmit + finish by the queue's rules), then accepted again.
  for (const job of [staleFinish, staleUpdate]) {
    await jobs.remove(T1, job.id);
    await jobs.add(T1, job.id, { again: true });
  }
  const retaken = await jobs.acceptMany(T1, 2);
  t.is(retaken.length, 2);
  // Single calls made together share a transaction.
  const singles = await Promise.allSettled([
    jobs.finish(staleFinish),
    jobs.update(staleUpdate, { progress: 1 }),
    ...rest.slice(0, 3).map((job) => jobs.finish(job, { done: job.id })),
    ...rest.slice(3).map((job) => jobs.update(job, { progress: job.id })),
  ]);
  t.is(singles[0]?.status, 'rejected');
  t.true(JobsError.is((singles[0] as PromiseRejectedResult).reason, 'halt'));
  t.is(singles[1]?.status, 'rejected');
  t.true(JobsError.is((singles[1] as PromiseRejectedResult).reason, 'halt'));
  for (const outcome of singles.slice(2)) t.is(outcome.status, 'fulfilled', String((outcome as PromiseRejectedResult).reason));
  for (const job of rest.slice(0, 3)) {
    t.is(await jobs.getJobState(T1, job.id), 'finished');
    t.deepEqual(await jobs.getJobData(T1, job.id), { done: job.id });
  }
  for (const job of rest.slice(3)) t.deepEqual(await jobs.getJobData(T1, job.id), { progress: job.id });
  // The new owners still hold the two jobs, with the data they were re-added with.
  for (const job of retaken) {
    t.is(await jobs.getJobState(T1, job.id), 'running');
    t.deepEqual(await jobs.getJobData(T1, job.id), { again: true });
  }
  // finishMany: the same, item by item.
  const many = await jobs.finishMany([
    { job: staleFinish },
    ...retaken.map((job) => ({ job, data: { second: job.id } })),
    ...rest.slice(3).map((job) => ({ job })),
  ]);
  t.is(many[0]?.status, 'rejected');
  t.true(JobsError.is((many[0] as PromiseRejectedResult).reason, 'halt'));
  t.is(many[1]?.status, 'fulfilled');
  t.is(many[2]?.status, 'fulfilled');
  // The three updated jobs hold stale handles now (update moved their sequence, not their lock): they finish.
  for (const outcome of many.slice(3)) t.is(outcome.status, 'fulfilled');
  for (const job of retaken) t.deepEqual(await jobs.getJobData(T1, job.id), { second: job.id });
  await assertConsistent(t, jobs);
});

// --- durability as seen by the caller ---------------------------------------

test('what each call wrote is readable by a fresh transaction the moment the call resolves', async (t) => {
  const { jobs } = await openTempJobs(t);
  const state = (id: string) => jobs.getJobState(T1, id);
  await jobs.add(T1, 'd-1');
  t.is(await state('d-1'), 'pending');
  await jobs.addMany(T1, Array.from({ length: 50 }, (_, i) => ({ id: `d-many-${i}` })));
  t.is(await jobs.pendingCount(T1), 51);
  const job = (await jobs.accept(T1)) as Job;
  t.is(await state(job.id), 'running');
  const updated = await jobs.update(job, { step: 1 });
  t.deepEqual(await jobs.getJobData(T1, job.id), { step: 1 });
  t.is(await jobs.finish(updated), 'finished');
  t.is(await state(job.id), 'finished');
  const batch = await jobs.acceptMany(T1, 20);
  for (const taken of batch) t.is(await state(taken.id), 'running');
  const finishes = await Promise.all(batch.map((taken) => jobs.finish(taken)));
  t.true(finishes.every((outcome) => outcome === 'finished'));
  // Read in one transaction right after: every finish is there.
  const states = await jobs.getJobStates(T1, batch.map((taken) => taken.id));
  t.true(states.every((entry) => entry.state === 'finished'));
  const queue = new LocalQueue<string>(jobs, T1, { size: 10 });
  const fromQueue = (await queue.take()) as Job;
  t.is(await state(fromQueue.id), 'running');
  t.is(await queue.finish(fromQueue), 'finished');
  t.is(await state(fromQueue.id), 'finished');
  await queue.stop();
  // Whatever the queue held is pending again once stop resolves.
  const report = await checkJobsConsistency(jobs.database);
  t.is(report.states.running, 0, 'nothing held by the stopped queue is left running');
  t.deepEqual(report.anomalies, []);
});

// --- the local queue ----------------------------------------------------------

test('a local queue gives back the jobs it held on stop and past their hold, and hands out fresh jobs after', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 10 }, (_, i) => ({ id: `h-${i}`, data: { i }, priority: i % 2 })),
  );
  const queue = new LocalQueue<string>(jobs, T1, { size: 8, holdMs: 400 });
  const first = (await queue.take()) as Job;
  // The queue took a batch and holds the rest of it; the jobs it holds are running in the store.
  const deadline = Date.now() + 10_000;
  while (queue.held === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  t.true(queue.held > 0);
  // Past their hold, the held jobs are given back (waited for generously: the machine may be loaded).
  let report = await checkJobsConsistency(jobs.database);
  for (const until = Date.now() + 20_000; report.states.running > 1 && Date.now() < until; report = await checkJobsConsistency(jobs.database)) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.is(report.states.running, 1, 'only the job a worker took is running');
  t.deepEqual(report.anomalies, []);
  t.is(await queue.finish(first), 'finished');
  // Jobs handed out after that are fresh: new locks.
  const second = (await queue.take()) as Job;
  const third = (await queue.take()) as Job;
  t.not(second.id, first.id);
  await queue.stop();
  t.is(await queue.take(), undefined);
  // stop gave back everything held: only the two handed-out jobs run.
  const after = await checkJobsConsistency(jobs.database);
  t.is(after.states.running, 2);
  t.deepEqual(after.anomalies, []);
  t.is(await jobs.finish(second), 'finished');
  t.is(await jobs.finish(third), 'finished');
  // Every job is still there to take: 10 - 3 finished.
  const rest = await jobs.acceptMany(T1, 100);
  t.is(rest.length, 7);
  for (const job of rest) t.deepEqual(job.data, { i: Number(job.id.slice(2)) });
});

test('a local queue never hands out a job twice while it fills, gives back and refills under many workers', async (t) => {
  const { jobs } = await openTempJobs(t);
  const total = 2_000;
  await jobs.addMany(T1, Array.from({ length: total }, (_, i) => ({ id: `w-${i}`, data: { i } })));
  const queue = new LocalQueue<string>(jobs, T1, { size: 100 });
  const seen = new Map<string, string>();
  let duplicates = 0;
  let finished = 0;
  const worker = async () => {
    for (;;) {
      const job = await queue.take();
      if (job === undefined) return;
      if (seen.has(job.id)) duplicates += 1;
      seen.set(job.id, job.lock);
      t.deepEqual(job.data, { i: Number(job.id.slice(2)) });
      if ((await queue.finish(job)) === 'finished') finished += 1;
    }
  };
  const workers = Array.from({ length: 16 }, worker);
  // Stopped once every job is finished (or a generous deadline passes, when something is lost).
  const deadline = Date.now() + 60_000;
  while (finished < total && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await queue.stop();
  await Promise.all(workers);
  t.is(duplicates, 0);
  t.is(seen.size, total);
  const report = await checkJobsConsistency(jobs.database);
  t.is(report.states.finished, total);
  t.deepEqual(report.anomalies, []);
});

// --- hand-over of parked accepts ----------------------------------------------

test('a write batch that updates jobs and enqueues others hands them to the parked accepts, each job once, each with its own activity row', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, [{ id: 'run-1' }, { id: 'run-2' }, { id: 'run-3' }]);
  const running = await jobs.acceptMany(T1, 3);
  t.is(running.length, 3);
  const parked = [
    jobs.acceptMany(T1, 3, { timeout: 30_000 }),
    jobs.accept(T1, { timeout: 30_000 }).then((job) => (job === undefined ? [] : [job])),
    jobs.acceptMany(T1, 2, { timeout: 30_000 }),
  ];
  // Let them find the queue empty and park.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const writes = await Promise.all([
    ...running.map((job, i) => jobs.update(job, { step: i })),
    jobs.add(T1, 'new-1', { n: 1 }),
    jobs.add(T1, 'new-2', { n: 2 }),
    jobs.addMany(T1, [{ id: 'new-3', data: { n: 3 } }, { id: 'new-4', data: { n: 4 } }, { id: 'new-5', data: { n: 5 } }]),
  ]);
  t.is(writes.length, 6);
  const served = (await Promise.all(parked)).flat();
  const ids = served.map((job) => job.id).sort();
  t.deepEqual(ids, ['new-1', 'new-2', 'new-3', 'new-4', 'new-5'], 'each new job went to one parked accept');
  for (const job of served) t.deepEqual(job.data, { n: Number(job.id.slice(4)) });
  const report = await checkJobsConsistency(jobs.database);
  t.deepEqual(report.anomalies, []);
  t.is(report.states.running, 3 + served.length);
  // Every holder can finish its job: the locks handed over are the stored ones.
  const finished = await jobs.finishMany([...served, ...(writes.slice(0, 3) as Job[])].map((job) => ({ job })));
  for (const outcome of finished) t.is(outcome.status, 'fulfilled', String((outcome as PromiseRejectedResult).reason));
});

test("a local queue's stop waits for every finish made through it, failed and refused ones included", async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 12 }, (_, i) => ({ id: `s-${i}`, data: { i } })));
  const queue = new LocalQueue<string>(jobs, T1, { size: 12 });
  const taken: Job[] = [];
  for (let i = 0; i < 10; i++) taken.push((await queue.take()) as Job);
  // One job is taken from its worker: its finish halts.
  t.true(await jobs.remove(T1, (taken[0] as Job).id));
  const settled = new Set<string>();
  const outcomes = taken.map((job) =>
    queue.finish(job, { done: job.id }).then(
      () => settled.add(job.id),
      (error: unknown) => {
        settled.add(job.id);
        return error;
      },
    ),
  );
  // Refused before any transaction: a handle with a bad id, data that is not JSON.
  const refused = [
    queue.finish({ ...(taken[1] as Job), id: 7 as unknown as string }).catch((error: unknown) => error),
    queue.finish(taken[2] as Job, { bad: () => 1 }).catch((error: unknown) => error),
  ];
  let timer: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    queue.stop().then(() => 'stopped'),
    new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('stop() never resolved'), 20_000);
    }),
  ]);
  clearTimeout(timer);
  t.is(stopped, 'stopped');
  t.is(settled.size, taken.length, 'every finish had settled when stop() resolved');
  const first = await outcomes[0];
  t.true(JobsError.is(first, 'halt'), String(first));
  for (const error of await Promise.all(refused)) t.true(error instanceof JobsError, String(error));
  const states = await jobs.getJobStates(T1, taken.map((job) => job.id));
  t.deepEqual(
    states.map((entry) => entry.state),
    [undefined, ...Array.from({ length: 9 }, () => 'finished')],
  );
  const report = await checkJobsConsistency(jobs.database);
  t.is(report.states.running, 0, 'the two jobs the queue held were given back');
  t.deepEqual(report.anomalies, []);
});

test('a job a local queue held a while has its activity stamped again when handed out, and one handed out at once does not', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, [{ id: 'r-1', data: { n: 1 } }, { id: 'r-2', data: { n: 2 } }]);
  // Held more than an eighth of its hold before it is handed out: stamped again then.
  const queue = new LocalQueue<string>(jobs, T1, { size: 4, holdMs: 4_000 });
  const first = (await queue.take()) as Job;
  const deadline = Date.now() + 10_000;
  while (queue.held === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(queue.held, 1);
  // The stamp of the accept that took both jobs (no state change since).
  const accepted = await jobs.getActivityVersionstamp(T1);
  t.truthy(accepted);
  t.deepEqual((await jobs.getInactiveSince(T1, accepted as string)).sort(), ['r-1', 'r-2']);
  await new Promise((resolve) => setTimeout(resolve, 900));
  const second = (await queue.take()) as Job;
  t.not(second.id, first.id);
  t.deepEqual(second.data, { n: Number(second.id.slice(2)) });
  t.deepEqual(await jobs.getInactiveSince(T1, accepted as string), [first.id], 'the held job was stamped when handed out, the other not');
  t.is(await queue.finish(second), 'finished');
  t.is(await queue.finish(first), 'finished');
  await queue.stop();
  await assertConsistent(t, jobs);
});

test('a local queue stopped while its accepts are in flight gives back what they bring, and stop resolves after', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 300 }, (_, i) => ({ id: `f-${i}`, data: { i } })));
  for (let round = 0; round < 5; round++) {
    const queue = new LocalQueue<string>(jobs, T1, { size: 100 });
    const taking = queue.take();
    // The first accept starts on the next turn; stop lands while it (or the second) is in flight.
    await new Promise((resolve) => setImmediate(resolve));
    if (round % 2 === 1) await new Promise((resolve) => setImmediate(resolve));
    await queue.stop();
    const job = await taking;
    const report = await checkJobsConsistency(jobs.database);
    t.deepEqual(report.anomalies, []);
    // Only a job a worker received may still run; everything the queue took besides is pending again.
    t.is(report.states.running, job === undefined ? 0 : 1, `round ${round}`);
    if (job !== undefined) t.is(await jobs.finish(job), 'finished');
  }
});

/** Resolves once the next accept of any handle has parked (found no job and waits on its watch). */
function nextPark(t: { teardown(fn: () => void): void }): Promise<void> {
  const park = ParkedAccepts.prototype.park;
  t.teardown(() => {
    ParkedAccepts.prototype.park = park;
  });
  return new Promise((resolve) => {
    ParkedAccepts.prototype.park = function (this: ParkedAccepts, ...args: Parameters<ParkedAccepts['park']>) {
      ParkedAccepts.prototype.park = park;
      const parked = park.apply(this, args);
      resolve();
      return parked;
    };
  });
}

test.serial('a waiting accept gets its job in the commit of the write that enqueues it: add, addMany, and a finish that enqueues again', async (t) => {
  const { jobs } = await openTempJobs(t);
  // Enqueued by a single add.
  let parked = nextPark(t);
  const single = jobs.accept(T1, { timeout: 30_000 });
  await parked;
  t.is(await jobs.add(T1, 'h-1', { n: 1 }), 'pending');
  t.is(await jobs.getJobState(T1, 'h-1'), 'running', 'taken in the add\'s own commit');
  t.deepEqual((await single)?.data, { n: 1 });
  // Enqueued by addMany, to an acceptMany that takes several.
  parked = nextPark(t);
  const many = jobs.acceptMany(T1, 3, { timeout: 30_000 });
  await parked;
  await jobs.addMany(T1, [1, 2, 3, 4].map((i) => ({ id: `hm-${i}`, data: { n: i } })));
  const states = await jobs.getJobStates(T1, ['hm-1', 'hm-2', 'hm-3', 'hm-4']);
  t.is(states.filter((entry) => entry.state === 'running').length, 3, 'three taken in the addMany\'s commit');
  const taken = await many;
  t.is(taken.length, 3);
  for (const job of taken) t.deepEqual(job.data, { n: Number(job.id.slice(3)) });
  // A finish that re-enqueues its job (flagged to run again) serves a waiting accept too.
  const [rest] = await jobs.getJobStates(T1, ['hm-1', 'hm-2', 'hm-3', 'hm-4'].filter((id) => !taken.some((job) => job.id === id)));
  const holder = (await jobs.accept(T1)) as Job;
  t.is(holder.id, rest?.id as string);
  await jobs.resubmit(T1, holder.id);
  parked = nextPark(t);
  const again = jobs.accept(T1, { timeout: 30_000 });
  await parked;
  t.is(await jobs.finish(holder, { n: 'again' }), 'pending');
  t.is(await jobs.getJobState(T1, holder.id), 'running', 'taken in the finish\'s own commit');
  const next = (await again) as Job;
  t.is(next.id, holder.id);
  t.deepEqual(next.data, { n: 'again' });
  t.not(next.lock, holder.lock);
  await assertConsistent(t, jobs);
});

test('an accept that meets stale entries among due jobs reads the queue again without the entries it took', async (t) => {
  const { jobs } = await openTempJobs(t);
  const keys = new JobKeys().forType(T1);
  const now = nowSeconds() - 10;
  await jobs.addMany(T1, Array.from({ length: 40 }, (_, i) => ({ id: `k-${i}-due`, data: { i }, scheduledTime: now })));
  // Jobs due in an hour, each with a stale entry among the due jobs (same priority, same time, ids in between).
  await jobs.addMany(T1, Array.from({ length: 40 }, (_, i) => ({ id: `k-${i}-later`, scheduledTime: now + 3_600 })));
  await jobs.database.doTransaction((tx) => {
    for (let i = 0; i < 40; i++) tx.set(keys.pendingKey(0, now, `k-${i}-later`), Buffer.alloc(0));
  });
  const seen = new Set<string>();
  for (let round = 0; round < 40; round++) {
    const batch = await jobs.acceptMany(T1, 5);
    if (batch.length === 0) break;
    for (const job of batch) {
      t.true(job.id.endsWith('-due'), `${job.id} is due`);
      t.false(seen.has(job.id), `${job.id} handed out twice`);
      seen.add(job.id);
      t.deepEqual(job.data, { i: Number(job.id.split('-')[1]) });
    }
    await jobs.finishMany(batch.map((job) => ({ job })));
  }
  t.is(seen.size, 40);
  t.deepEqual(await jobs.acceptMany(T1, 5), []);
  await assertConsistent(t, jobs);
  t.is(await jobs.pendingCount(T1), 40, 'the later jobs keep their own entries');
});

test('a better job added during a pipelined drain of one big rank is taken by the next batches, not after the rank', async (t) => {
  const { jobs } = await openTempJobs(t);
  const total = 3_000;
  const now = nowSeconds() - 10;
  await jobs.addMany(T1, Array.from({ length: total }, (_, i) => ({ id: `big-${i}`, scheduledTime: now })));
  const order: string[] = [];
  let addedAt: number | undefined;
  const added = (async () => {
    // Once the drain is well under way (batches in flight, each passing over the others' claims).
    while (order.length < 600) await new Promise((resolve) => setTimeout(resolve, 1));
    await jobs.add(T1, 'urgent', undefined, { priority: 10, scheduledTime: now });
    addedAt = order.length;
  })();
  const workers = Array.from({ length: 8 }, async () => {
    for (;;) {
      const batch = await jobs.acceptMany(T1, 50);
      if (batch.length === 0) {
        if (addedAt !== undefined || order.length >= total) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      for (const job of batch) order.push(job.id);
      await jobs.finishMany(batch.map((job) => ({ job })));
    }
  });
  await Promise.all([...workers, added]);
  const position = order.indexOf('urgent');
  t.true(position >= 0, 'the urgent job was taken');
  t.is(new Set(order).size, order.length, 'no job taken twice');
  t.is(order.length, total + 1);
  // Batches in flight when it was added may still take the big rank; the ones after must take it first.
  t.true(position - (addedAt as number) < 1_000, `taken ${position - (addedAt as number)} jobs after it was added (at ${addedAt})`);
  await assertConsistent(t, jobs);
});

test('pipelined accept batches hand a backlog out best first: priorities never rise, and within one priority scheduled times never fall', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = nowSeconds() - 100;
  // Big ranks (batches in flight pass over each other's claims in them) and small ones.
  const specs = Array.from({ length: 2_400 }, (_, i) => ({
    id: `o-${i}`,
    priority: i % 4,
    scheduledTime: now + (i % 3 === 0 ? 0 : i % 7),
  }));
  await jobs.addMany(T1, specs);
  const order: Job[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const batch = await jobs.acceptMany(T1, 50);
        if (batch.length === 0) return;
        order.push(...batch);
        await jobs.finishMany(batch.map((job) => ({ job })));
      }
    }),
  );
  t.is(order.length, specs.length);
  t.is(new Set(order.map((job) => job.id)).size, specs.length);
  let inversions = 0;
  let first: string | undefined;
  for (let i = 1; i < order.length; i++) {
    const before = order[i - 1] as Job;
    const after = order[i] as Job;
    const worse = after.priority > before.priority || (after.priority === before.priority && after.scheduledTime < before.scheduledTime);
    if (worse) {
      inversions += 1;
      first ??= `#${i}: ${before.priority}@${before.scheduledTime - now} then ${after.priority}@${after.scheduledTime - now}`;
    }
  }
  t.is(inversions, 0, `first: ${first}`);
});
