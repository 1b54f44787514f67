// The app's jobs handle: `Jobs` itself, reporting what each call did to a
// JobActivity after it succeeded. Every path that changes a job's state in
// this process goes through the app's handle (main-thread calls, the bridge
// that actors use, the scheduler), so counting here counts them all: a job
// failed (given up) by `fail`/`failMany`, finished by the others. A crashed
// run ends in a `failAttempt` (its job pending again), which counts its run
// time but no finish: the scheduler reports the crash itself.

import {
  type AcceptOptions,
  type AddOptions,
  type CompleteItem,
  type Database,
  type FailAttemptOptions,
  type FailItem,
  type Job,
  type JobErrorInput,
  type JobSpec,
  type JobState,
  Jobs,
  type ReEnqueueOptions,
  type Settled,
  type Versionstamp,
  type WorkerItem,
} from '@jobtree/core';
import type { FinishOutcome, JobActivity } from './job-activity.js';

export class ObservedJobs extends Jobs {
  readonly #activity: JobActivity;

  constructor(database: Database, activity: JobActivity) {
    super(database);
    this.#activity = activity;
  }

  override async add(type: string, id: string, data?: unknown, options?: AddOptions): Promise<JobState> {
    const state = await super.add(type, id, data, options);
    if (state === 'pending') this.#activity.recordAdded(type, [id]);
    return state;
  }

  override async addMany(type: string, jobs: readonly JobSpec[]): Promise<JobState[]> {
    const states = await super.addMany(type, jobs);
    this.#activity.recordAdded(
      type,
      jobs.filter((_job, index) => states[index] === 'pending').map((job) => job.id),
    );
    return states;
  }

  override async remove(type: string, id: string): Promise<boolean> {
    const removed = await super.remove(type, id);
    if (removed) this.#activity.recordRemoved(type, id);
    return removed;
  }

  override async accept<T extends string>(type: T, options?: AcceptOptions): Promise<Job<T> | undefined> {
    const job = await super.accept(type, options);
    if (job !== undefined) this.#activity.recordAccepted(type, [job]);
    return job;
  }

  override async acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
    const jobs = await super.acceptMany(type, max, options);
    this.#activity.recordAccepted(type, jobs);
    return jobs;
  }

  override async finish(job: Job, data?: unknown): Promise<'pending' | 'finished'> {
    const state = await super.finish(job, data);
    this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'finished');
    return state;
  }

  override async finishMany(items: readonly WorkerItem[]): Promise<Settled<'pending' | 'finished'>[]> {
    const outcomes = await super.finishMany(items);
    this.#recordEnded(items.map((item) => item.job), outcomes, 'finished');
    return outcomes;
  }

  override async complete(job: Job, result?: unknown): Promise<'pending' | 'finished'> {
    const state = await super.complete(job, result);
    this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'finished');
    return state;
  }

  override async completeMany(items: readonly CompleteItem[]): Promise<Settled<'pending' | 'finished'>[]> {
    const outcomes = await super.completeMany(items);
    this.#recordEnded(items.map((item) => item.job), outcomes, 'finished');
    return outcomes;
  }

  override async fail(job: Job, error: JobErrorInput): Promise<'pending' | 'finished'> {
    const state = await super.fail(job, error);
    this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'failed');
    return state;
  }

  override async failMany(items: readonly FailItem[]): Promise<Settled<'pending' | 'finished'>[]> {
    const outcomes = await super.failMany(items);
    this.#recordEnded(items.map((item) => item.job), outcomes, 'failed');
    return outcomes;
  }

  override async failAttempt(job: Job, options: FailAttemptOptions): Promise<'pending'> {
    const state = await super.failAttempt(job, options);
    this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'requeued');
    return state;
  }

  /** Reports the calls that ended their jobs (as `ended`) or sent them back to the queue (a job flagged to run again). */
  #recordEnded(jobs: readonly Job[], outcomes: readonly Settled<'pending' | 'finished'>[], ended: FinishOutcome): void {
    const byType = new Map<string, { id: string; lock: string; outcome: FinishOutcome }[]>();
    jobs.forEach((job, index) => {
      const outcome = outcomes[index];
      if (outcome?.status !== 'fulfilled') return;
      const done = { id: job.id, lock: job.lock, outcome: outcome.value === 'pending' ? ('requeued' as const) : ended };
      const list = byType.get(job.type);
      if (list === undefined) byType.set(job.type, [done]);
      else list.push(done);
    });
    for (const [type, list] of byType) this.#activity.recordFinished(type, list);
  }

  override async reEnqueueInactive(type: string, since: Versionstamp, options?: ReEnqueueOptions): Promise<string[]> {
    const ids = await super.reEnqueueInactive(type, since, options);
    this.#activity.recordReEnqueued(type, ids);
    return ids;
  }
}
