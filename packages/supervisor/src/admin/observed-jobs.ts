// The app's jobs handle: `Jobs` itself, reporting what each call did to a
// JobActivity after it succeeded. Every path that changes a job's state in
// this process goes through the app's handle (main-thread calls, the bridge
// that actors use, the scheduler), so counting here counts them all.

import { type AcceptOptions, type AddOptions, type Database, type Job, type JobSpec, type JobState, Jobs, type ReEnqueueOptions, type Settled, type Versionstamp, type WorkerItem } from '@jobtree/core';
import type { JobActivity } from './job-activity.js';

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
    this.#activity.recordFinished(job.type, [job]);
    return state;
  }

  override async finishMany(items: readonly WorkerItem[]): Promise<Settled<'pending' | 'finished'>[]> {
    const outcomes = await super.finishMany(items);
    const done = items.filter((_item, index) => outcomes[index]?.status === 'fulfilled').map((item) => item.job);
    const byType = new Map<string, Job[]>();
    for (const job of done) {
      const list = byType.get(job.type);
      if (list === undefined) byType.set(job.type, [job]);
      else list.push(job);
    }
    for (const [type, jobs] of byType) this.#activity.recordFinished(type, jobs);
    return outcomes;
  }

  override async reEnqueueInactive(type: string, since: Versionstamp, options?: ReEnqueueOptions): Promise<string[]> {
    const ids = await super.reEnqueueInactive(type, since, options);
    this.#activity.recordReEnqueued(type, ids);
    return ids;
  }
}
