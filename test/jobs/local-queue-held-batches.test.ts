// A local queue holds the jobs of each accept together (one entry per
// batch, not per job): `held` counts the jobs of every batch, workers get
// the older batch's jobs first, a batch past its hold is given back whole
// while a newer one is still handed out, and a stop gives back each held job
// once. And its finishes are counted without a `then` of its own when its
// source is a `Jobs` handle, through the finish's promise otherwise: either
// way `stop()` resolves once every finish has settled, after the callbacks
// the worker put on it.

import test from 'ava';
import { checkJobsConsistency, JobsError, LocalQueue } from '@jobtree/core';
import type { Job, Jobs, LocalQueueSource } from '@jobtree/core';
import { acceptStartedAt } from '../../packages/core/src/jobs/accept-calls.js';
import { openTempJobs, T1 } from './temp-jobs.js';

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A source that forwards to `jobs` but holds each accept until the test
 * lets it through (`release()`), and records what each accept brought.
 */
class GatedSource implements LocalQueueSource {
  readonly batches: Job[][] = [];
  readonly #jobs: Jobs;
  #gates: Array<() => void> = [];
  #waiting = 0;
  #open = false;

  constructor(jobs: Jobs) {
    this.#jobs = jobs;
  }

  get waiting(): number {
    return this.#waiting;
  }

  release(): void {
    for (const open of this.#gates.splice(0)) open();
  }

  /** Lets every accept through from now on (before the queue's stop, which waits for its accepts). */
  openAll(): void {
    this.#open = true;
    this.release();
  }

  acceptMany: Jobs['acceptMany'] = async (type, max, options) => {
    if (!this.#open) {
      this.#waiting += 1;
      await new Promise<void>((resolve) => this.#gates.push(resolve));
      this.#waiting -= 1;
    }
    const taken = await this.#jobs.acceptMany(type, max, options);
    this.batches.push(taken);
    return taken;
  };

  update: Jobs['update'] = (job, data) => this.#jobs.update(job, data);
  finish: Jobs['finish'] = (job, data) => this.#jobs.finish(job, data);
  finishMany: Jobs['finishMany'] = (items) => this.#jobs.finishMany(items);
  resubmit = ((job: Job, options?: object) => this.#jobs.resubmit(job, options)) as Jobs['resubmit'];
  getTypeTimeout: Jobs['getTypeTimeout'] = (type) => this.#jobs.getTypeTimeout(type);
}

test('held counts the jobs of every batch, the older batch is handed out first, and a stop gives back each held job once', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 20 }, (_, i) => ({ id: `b${i}` })));
  const source = new GatedSource(jobs);
  const queue = new LocalQueue(source, T1, { size: 8 });
  // A waiting worker starts the first accept (half the queue: 4 jobs).
  const first = queue.take();
  await until(() => source.waiting === 1, 'the first accept');
  source.release();
  const firstJob = (await first) as Job;
  // The second accept follows while the worker holds its job: 4 more.
  await until(() => source.waiting === 1 || source.batches.length === 2, 'the second accept');
  source.release();
  await until(() => queue.held === 7, 'both batches held');
  const [older, newer] = source.batches as [Job[], Job[]];
  t.is(firstJob.id, (older[0] as Job).id);

  const handed: Job[] = [];
  for (let i = 0; i < 4; i++) handed.push((await queue.take()) as Job);
  t.deepEqual(
    handed.map((job) => job.id),
    [...older.slice(1), newer[0] as Job].map((job) => job.id),
    'the older batch first, then the newer one in its order',
  );
  t.is(queue.held, 3);
  source.openAll();
  await queue.stop();
  t.is(queue.held, 0);
  const report = await checkJobsConsistency(jobs.database);
  t.deepEqual(report.anomalies, []);
  t.is(report.states.running, 5, 'only the jobs handed out still run');
  await until(async () => (await jobs.pendingCount(T1)) === 15, 'the give-backs');
  const running = new Set(await jobs.getActiveJobIds(T1));
  t.deepEqual([...running].sort(), [firstJob, ...handed].map((job) => job.id).sort());
});

test('a batch past its hold is given back whole while a newer batch is still handed out', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 10 }, (_, i) => ({ id: `e${i}` })));
  const holdMs = 3_000;
  const source = new GatedSource(jobs);
  const queue = new LocalQueue(source, T1, { size: 4, holdMs });
  t.teardown(() => {
    source.openAll();
    return queue.stop();
  });
  const first = queue.take();
  await until(() => source.waiting === 1, 'the first accept');
  source.release();
  const firstJob = (await first) as Job;
  await until(() => source.waiting === 1, 'the second accept');
  // The second batch is taken well into the first one's hold.
  const olderAt = acceptStartedAt(source.batches[0] as Job[]) as number;
  await until(() => performance.now() >= olderAt + holdMs * 0.6, 'part of the hold');
  source.release();
  await until(() => queue.held === 3, 'both batches held');
  const [older, newer] = source.batches as [Job[], Job[]];
  // Past the older batch's hold: its last job goes back, a job of the newer batch comes out.
  await until(() => performance.now() >= olderAt + holdMs + 50, 'the end of the older hold');
  const next = (await queue.take()) as Job;
  t.true(
    newer.some((job) => job.id === next.id),
    `${next.id} comes from the newer batch (${newer.map((job) => job.id)}), not the expired ${older.map((job) => job.id)}`,
  );
  t.is(firstJob.id, (older[0] as Job).id);
  const givenBack = (older[1] as Job).id;
  await until(async () => (await jobs.getJobStates(T1, [givenBack]))[0]?.state === 'pending', 'the expired job given back');
  t.is(queue.held, 1);
});

test('stop() resolves after every finish made through the queue has settled and its callbacks have run', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 30 }, (_, i) => ({ id: `s${i}` })));
  const queue = new LocalQueue<string>(jobs, T1, { size: 30 });
  const events: string[] = [];
  const taken: Job[] = [];
  for (let i = 0; i < 30; i++) taken.push((await queue.take()) as Job);
  await jobs.remove(T1, (taken[0] as Job).id);
  for (const job of taken) {
    queue.finish(job).then(
      () => events.push('finished'),
      (error: unknown) => events.push(JobsError.is(error, 'halt') ? 'halted' : String(error)),
    );
  }
  queue.finish({ ...(taken[1] as Job), id: '' }).catch((error: unknown) => events.push(JobsError.is(error, 'invalid_job_id') ? 'refused' : String(error)));
  await queue.stop();
  events.push('stopped');
  t.is(events.at(-1), 'stopped');
  t.is(events.filter((event) => event === 'finished').length, 29);
  t.is(events.filter((event) => event === 'halted').length, 1);
  t.is(events.filter((event) => event === 'refused').length, 1);
});

test('a local queue over a source that is not a Jobs handle counts its finishes through their promises', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(T1, Array.from({ length: 6 }, (_, i) => ({ id: `p${i}` })));
  let release: (() => void) | undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const source: LocalQueueSource = {
    acceptMany: (type, max, options) => jobs.acceptMany(type, max, options),
    update: (job, data) => jobs.update(job, data),
    // A finish that takes its time: stop() must wait for it.
    finish: async (job, data) => {
      await gate;
      return jobs.finish(job, data);
    },
    finishMany: (items) => jobs.finishMany(items),
    resubmit: ((job: Job, options?: object) => jobs.resubmit(job, options)) as Jobs['resubmit'],
    getTypeTimeout: (type) => jobs.getTypeTimeout(type),
  };
  const queue = new LocalQueue<string>(source, T1, { size: 6 });
  const job = (await queue.take()) as Job;
  let finished = false;
  void queue.finish(job).then(() => {
    finished = true;
  });
  let stopped = false;
  const stopping = queue.stop().then(() => {
    stopped = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.false(stopped, 'stop() waits for the finish');
  release?.();
  await stopping;
  t.true(finished);
  t.is((await jobs.getJobStates(T1, [job.id]))[0]?.state, 'finished');
});
