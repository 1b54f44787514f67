// The app's jobs handle: `Jobs` itself, reporting what each call did to a
// JobActivity after it succeeded. Every path that changes a job's state in
// this process goes through the app's handle (main-thread calls, the bridge
// that actors use, the scheduler), so counting here counts them all. A
// crashed run also ends in a finish (its job flagged to run again), which
// looks like any other requeue here: the scheduler reports the crash itself.

import { type AcceptOptions, type AddOptions, type Database, type Job, type JobSpec, type JobState, Jobs, type ReEnqueueOptions, type Settled, type Versionstamp, type WorkerItem } from '@jobtree/core';
import { isFailedOutcome } from '../processors/failed-outcome.js';
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
    this.#activity.recordFinished(job.type, [{ id: job.id, lock: job.lock, outcome: finishOutcome(state, data) }]);
    return state;
  }

  override async finishMany(items: readonly WorkerItem[]): Promise<Settled<'pending' | 'finished'>[]> {
    const outcomes = await super.finishMany(items);
    const byType = new Map<string, { id: string; lock: string; outcome: FinishOutcome }[]>();
    items.forEach(({ job, data }, index) => {
      const outcome = outcomes[index];
      if (outcome?.status !== 'fulfilled') return;
      const done = { id: job.id, lock: job.lock, outcome: finishOutcome(outcome.value, data) };
      const list = byType.get(job.type);
      if (list === undefined) byType.set(job.type, [done]);
      else list.push(done);
    });
    for (const [type, jobs] of byType) this.#activity.recordFinished(type, jobs);
    return outcomes;
  }

  override async reEnqueueInactive(type: string, since: Versionstamp, options?: ReEnqueueOptions): Promise<string[]> {
    const ids = await super.reEnqueueInactive(type, since, options);
    this.#activity.recordReEnqueued(type, ids);
    return ids;
  }
}

/** A job flagged for resubmission goes back to the queue: it did not finish, whatever the data. */
function finishOutcome(state: 'pending' | 'finished', data: unknown): FinishOutcome {
  if (state === 'pending') return 'requeued';
  return isFailedOutcome(data) ? 'failed' : 'finished';
}
