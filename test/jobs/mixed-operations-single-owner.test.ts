// Everything the hot path does at once, against the invariants that must
// hold whatever the interleaving: adds (new ids, and ids that exist in any
// state), removes, local-queue workers that update, flag and finish, plain
// accepts that wait and are served by hand-over, and a second handle's
// workers on the same database. No two workers may both succeed on one job
// at once, every success goes through the lock the worker was handed, and
// the keyspace (records, pending index, activity rows) stays consistent.

import test from 'ava';
import { checkJobsConsistency, JobsError, LocalQueue, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';
import { seededRandom } from '../seeded-random.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('adds, removes, updates, flags, finishes and hand-overs at once never give one job to two succeeding workers', async (t) => {
  const { jobs } = await openTempJobs(t);
  const other = await openJobs({ database: jobs.database });
  t.teardown(() => other.close());
  const next = seededRandom(18_018);
  const ids = Array.from({ length: 150 }, (_, i) => `m-${i}`);
  const problems: string[] = [];
  /**
   * What happened to each job, in the order the calls answered: hand-outs
   * and successful updates and finishes, by lock (also the message of a
   * failure), each success with the point in that order where its call was
   * made. The store holds one lock per job at a time: once a newer lock was
   * handed out, a call made with an older one must not succeed. Answers may
   * come in another order than their commits (a hand-over served by a
   * finish reaches its taker once readable, before the finisher hears of
   * its durable finish), so a success is checked against what had answered
   * before its call was made, and a newer hand-out counts only when its
   * lock itself succeeded (a lock handed out later may be an old one a
   * local queue held while the job was removed and taken again: its
   * holder gets halt, which is fine).
   */
  const history = new Map<string, Array<{ event: string; lock: string; calledAt?: number }>>();
  const log = (id: string, event: string, lock = '', calledAt?: number) => {
    let events = history.get(id);
    if (events === undefined) {
      events = [];
      history.set(id, events);
    }
    events.push(calledAt === undefined ? { event, lock } : { event, lock, calledAt });
  };
  /** The point in a job's history at which a call is made now. */
  const calling = (id: string) => history.get(id)?.length ?? 0;
  const describe = (id: string) => (history.get(id) ?? []).map(({ event, lock }) => `${event} ${lock.slice(0, 6)}`).join(' | ');
  let handedOut = 0;
  let stop = false;

  const received = (job: Job) => {
    handedOut += 1;
    if (history.get(job.id)?.some((entry) => entry.event === 'handed out' && entry.lock === job.lock)) {
      problems.push(`${job.id}: lock ${job.lock} handed out twice`);
    }
    log(job.id, 'handed out', job.lock);
    if (typeof job.data !== 'object' || job.data === null || (job.data as { id?: string }).id !== job.id) {
      problems.push(`${job.id}: data ${JSON.stringify(job.data)}`);
    }
  };
  const succeeded = (job: Job, what: string, calledAt: number) => {
    const events = history.get(job.id) ?? [];
    const handed = events.findLastIndex((entry, index) => index < calledAt && entry.event === 'handed out' && entry.lock === job.lock);
    log(job.id, `ok ${what}`, job.lock, calledAt);
    if (handed < 0) problems.push(`${job.id}: ${what} succeeded under a lock never handed out`);
  };
  /** Successes whose call was made after a newer lock that succeeded had been handed out. */
  const supersededSuccesses = (): string[] => {
    const found: string[] = [];
    for (const [id, events] of history) {
      const succeededLocks = new Set(events.filter((entry) => entry.event.startsWith('ok')).map((entry) => entry.lock));
      for (const entry of events) {
        if (entry.calledAt === undefined) continue;
        const handed = events.findLastIndex((other, index) => index < (entry.calledAt as number) && other.event === 'handed out' && other.lock === entry.lock);
        const newer = events.findIndex(
          (other, index) => index > handed && index < (entry.calledAt as number) && other.event === 'handed out' && other.lock !== entry.lock && succeededLocks.has(other.lock),
        );
        if (handed >= 0 && newer >= 0) found.push(`${id}: ${entry.event} under ${entry.lock.slice(0, 6)} succeeded, called after ${(events[newer] as { lock: string }).lock.slice(0, 6)} was handed out`);
      }
    }
    return found;
  };
  const work = async (handle: Jobs, job: Job, finish: (job: Job, data: unknown) => Promise<unknown>) => {
    received(job);
    try {
      let current = job;
      if (next() < 0.3) {
        const calledAt = calling(job.id);
        current = await handle.update(current, { id: job.id, step: 1 });
        succeeded(current, 'update', calledAt);
      }
      if (next() < 0.1) {
        const calledAt = calling(job.id);
        current = await handle.resubmit(current);
        succeeded(current, 'resubmit', calledAt);
      }
      if (next() < 0.3) await sleep(Math.floor(next() * 5));
      const calledAt = calling(job.id);
      await finish(current, { id: job.id, done: true });
      succeeded(current, 'finish', calledAt);
    } catch (error) {
      log(job.id, 'halt', job.lock);
      if (!JobsError.is(error, 'halt')) problems.push(`${job.id}: ${String(error)}`);
    }
  };

  const queues: Array<LocalQueue<string>> = [];
  const workers: Promise<void>[] = [];
  for (const handle of [jobs, other]) {
    const queue = new LocalQueue<string>(handle, T1, { size: 40 });
    queues.push(queue);
    for (let w = 0; w < 6; w++) {
      workers.push(
        (async () => {
          for (;;) {
            const job = await queue.take();
            if (job === undefined) return;
            await work(handle, job, (j, data) => queue.finish(j, data));
          }
        })(),
      );
    }
  }
  // Plain accepts that wait: served by the writes' hand-over, or by their watch.
  for (let w = 0; w < 3; w++) {
    workers.push(
      (async () => {
        while (!stop) {
          const job = await jobs.accept(T1, { timeout: 200 });
          if (job !== undefined) await work(jobs, job, (j, data) => jobs.finish(j, data));
        }
      })(),
    );
  }
  // The producer: every kind of add and remove, singly and in batches, for 2.5 s.
  const until = Date.now() + 2_500;
  while (Date.now() < until) {
    const roll = next();
    const id = ids[Math.floor(next() * ids.length)] as string;
    try {
      if (roll < 0.45) {
        const batch = Array.from({ length: 1 + Math.floor(next() * 20) }, () => ids[Math.floor(next() * ids.length)] as string);
        await jobs.addMany(
          T1,
          [...new Set(batch)].map((batchId) => ({ id: batchId, data: { id: batchId }, priority: Math.floor(next() * 3) })),
        );
      } else if (roll < 0.8) {
        log(id, 'add');
        void other.add(T1, id, { id }, { priority: Math.floor(next() * 3) }).then(
          (state) => log(id, `added: ${state}`),
          (error: unknown) => problems.push(`add ${id}: ${String(error)}`),
        );
      } else if (roll < 0.9) {
        log(id, 'remove');
        void jobs.remove(T1, id).then(
          (existed) => log(id, `removed: ${existed}`),
          (error: unknown) => problems.push(`remove ${id}: ${String(error)}`),
        );
      } else {
        await sleep(Math.floor(next() * 4));
      }
    } catch (error) {
      problems.push(`producer: ${String(error)}`);
    }
    if (next() < 0.2) await new Promise((resolve) => setImmediate(resolve));
  }
  stop = true;
  // Let the workers drain what is pending, then stop the queues.
  const drainUntil = Date.now() + 20_000;
  while ((await jobs.pendingCount(T1)) > 0 && Date.now() < drainUntil) await sleep(50);
  await Promise.all(queues.map((queue) => queue.stop()));
  await Promise.all(workers);
  // What the stopped queues gave back is pending again: finish it here.
  for (let batch = await jobs.acceptMany(T1, 1_000); batch.length > 0; batch = await jobs.acceptMany(T1, 1_000)) {
    for (const job of batch) received(job);
    const calledAt = batch.map((job) => calling(job.id));
    for (const [index, outcome] of (await jobs.finishMany(batch.map((job) => ({ job })))).entries()) {
      if (outcome.status === 'fulfilled') succeeded(batch[index] as Job, 'finish', calledAt[index] as number);
      else problems.push(`${(batch[index] as Job).id}: ${String(outcome.reason)}`);
    }
  }
  problems.push(...supersededSuccesses());
  const first = problems[0]?.split(':')[0];
  t.deepEqual(problems.slice(0, 10), [], `${problems.length} problems; history of ${first}: ${describe(first ?? '')}`);
  t.true(handedOut > 100, `${handedOut} jobs handed out`);
  const report = await checkJobsConsistency(jobs.database);
  t.deepEqual(report.anomalies, []);
  t.is(report.states.running, 0, 'every job handed out was finished or halted');
  t.is(report.states.pending, 0);
});
