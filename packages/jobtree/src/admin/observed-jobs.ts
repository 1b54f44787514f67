// The app's jobs handle: the jobs API itself (a handle on the database, or
// a process's share of an embedded store owned by another process),
// reporting what each call did to a JobActivity after it succeeded. Every
// path that changes a job's state in this process goes through the app's
// handle (main-thread calls, the bridge that actors use, the scheduler), so
// counting here counts them all: a job failed (given up) by
// `fail`/`failMany`, finished by the others, cancelled by `cancel`, run
// again by `retry`. A crashed run ends in a
// `failAttempt` (its job pending again), which counts its run time but no
// finish: the scheduler reports the crash itself.

import {
  type AcceptOptions,
  type AddOptions,
  type CompleteItem,
  type Database,
  type FailAttemptOptions,
  type FailItem,
  type Job,
  type JobError,
  type JobErrorInput,
  type JobSpec,
  type JobState,
  type JobsClock,
  JobsHandle,
  type ReEnqueueOptions,
  type Settled,
  SharedJobs,
  type StoreSharing,
  type Versionstamp,
  type WorkerItem,
  type FlowSpec,
} from '@jobtree/core';
import type { FinishOutcome, JobActivity } from './job-activity.js';

// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor must take any arguments
type JobsClass = new (...args: any[]) => JobsHandle;

/** The counting subclass of a jobs handle class: `activity` is told of every call that changed jobs. */
function observed<B extends JobsClass>(Base: B) {
  return class Observed extends Base {
    #activity: JobActivity | undefined;

    /** @internal set once, right after construction */
    observeWith(activity: JobActivity): this {
      this.#activity = activity;
      return this;
    }

    get #counted(): JobActivity {
      return this.#activity as JobActivity;
    }

    override async add(type: string, id: string, data?: unknown, options?: AddOptions): Promise<JobState> {
      const ids = [id];
      // `#adding` inlined: the one add per job of a trickle need not cost a closure and a second async call.
      this.#counted.adding(type, ids);
      let state: JobState;
      try {
        state = await super.add(type, id, data, options);
      } catch (error) {
        this.#counted.notAdded(type, ids);
        throw error;
      }
      if (state === 'pending') this.#counted.recordAdded(type, ids);
      else this.#counted.notAdded(type, ids);
      return state;
    }

    override async addMany(type: string, jobs: readonly JobSpec[]): Promise<JobState[]> {
      const states = await this.#adding(
        type,
        jobs.map((job) => job.id),
        () => super.addMany(type, jobs),
      );
      const pending = (_job: JobSpec, index: number) => states[index] === 'pending';
      this.#counted.recordAdded(type, jobs.filter(pending).map((job) => job.id));
      this.#counted.notAdded(
        type,
        jobs.filter((job, index) => !pending(job, index)).map((job) => job.id),
      );
      return states;
    }

    /**
     * Makes `call` (an add of `ids`), with their add time noted before it
     * and dropped if it fails: see `JobActivity.adding`.
     */
    async #adding<R>(type: string, ids: readonly string[], call: () => Promise<R>): Promise<R> {
      this.#counted.adding(type, ids);
      try {
        return await call();
      } catch (error) {
        this.#counted.notAdded(type, ids);
        throw error;
      }
    }

    /** A flow's jobs without children are added pending, and counted so; its parents are pending only later. */
    override async addFlow(flow: FlowSpec): Promise<JobState> {
      const leaves = new Map<string, string[]>();
      const visit = (node: FlowSpec): void => {
        if (node.children !== undefined && node.children.length > 0) {
          for (const child of node.children) visit(child);
          return;
        }
        const ids = leaves.get(node.type) ?? [];
        ids.push(node.id);
        leaves.set(node.type, ids);
      };
      visit(flow);
      for (const [type, ids] of leaves) this.#counted.adding(type, ids);
      let state: JobState;
      try {
        state = await super.addFlow(flow);
      } catch (error) {
        for (const [type, ids] of leaves) this.#counted.notAdded(type, ids);
        throw error;
      }
      for (const [type, ids] of leaves) this.#counted.recordAdded(type, ids);
      return state;
    }

    override async remove(type: string, id: string): Promise<boolean> {
      const removed = await super.remove(type, id);
      if (removed) this.#counted.recordRemoved(type, id);
      return removed;
    }

    override async cancel(type: string, id: string): Promise<boolean> {
      const cancelled = await super.cancel(type, id);
      if (cancelled) this.#counted.recordCancelled(type, id);
      return cancelled;
    }

    override async retry(type: string, id: string): Promise<void> {
      await super.retry(type, id);
      this.#counted.recordRetried(type, id);
    }

    override async accept<T extends string>(type: T, options?: AcceptOptions): Promise<Job<T> | undefined> {
      const job = await super.accept(type, options);
      if (job !== undefined) this.#counted.recordAccepted(type, [job]);
      return job;
    }

    override async acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
      const jobs = await super.acceptMany(type, max, options);
      this.#counted.recordAccepted(type, jobs);
      return jobs;
    }

    override async finish(job: Job, data?: unknown): Promise<'pending' | 'finished'> {
      const state = await super.finish(job, data);
      this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'finished');
      return state;
    }

    override async finishMany(items: readonly WorkerItem[]): Promise<Settled<'pending' | 'finished'>[]> {
      const outcomes = await super.finishMany(items);
      this.#recordEnded(
        items.map((item) => item.job),
        outcomes,
        'finished',
      );
      return outcomes;
    }

    override async complete(job: Job, result?: unknown): Promise<'pending' | 'finished'> {
      const state = await super.complete(job, result);
      this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'finished');
      return state;
    }

    override async completeMany(items: readonly CompleteItem[]): Promise<Settled<'pending' | 'finished'>[]> {
      const outcomes = await super.completeMany(items);
      this.#recordEnded(
        items.map((item) => item.job),
        outcomes,
        'finished',
      );
      return outcomes;
    }

    override async fail(job: Job, error: JobErrorInput): Promise<'pending' | 'finished'> {
      const state = await super.fail(job, error);
      this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'failed', [error]);
      return state;
    }

    override async failMany(items: readonly FailItem[]): Promise<Settled<'pending' | 'finished'>[]> {
      const outcomes = await super.failMany(items);
      this.#recordEnded(
        items.map((item) => item.job),
        outcomes,
        'failed',
        items.map((item) => item.error),
      );
      return outcomes;
    }

    override async failAttempt(job: Job, options: FailAttemptOptions): Promise<'pending'> {
      const state = await super.failAttempt(job, options);
      this.#recordEnded([job], [{ status: 'fulfilled', value: state }], 'requeued');
      return state;
    }

    /**
     * Reports the calls that ended their jobs (as `ended`) or sent them back
     * to the queue (a job flagged to run again); `errors`, for `fail`, the
     * error each job was given up with.
     */
    #recordEnded(
      jobs: readonly Job[],
      outcomes: readonly Settled<'pending' | 'finished'>[],
      ended: FinishOutcome,
      errors?: readonly JobErrorInput[],
    ): void {
      const byType = new Map<string, { id: string; lock: string; outcome: FinishOutcome; failure?: { error: JobError; attempts: number } }[]>();
      jobs.forEach((job, index) => {
        const outcome = outcomes[index];
        if (outcome?.status !== 'fulfilled') return;
        const done: { id: string; lock: string; outcome: FinishOutcome; failure?: { error: JobError; attempts: number } } = {
          id: job.id,
          lock: job.lock,
          outcome: outcome.value === 'pending' ? ('requeued' as const) : ended,
        };
        const error = errors?.[index];
        // `fail` counts one failed attempt more than the job had when accepted.
        if (done.outcome === 'failed' && error !== undefined) done.failure = { error: jobError(error), attempts: job.attempts + 1 };
        const list = byType.get(job.type);
        if (list === undefined) byType.set(job.type, [done]);
        else list.push(done);
      });
      for (const [type, list] of byType) this.#counted.recordFinished(type, list);
    }

    override async reEnqueueInactive(type: string, since: Versionstamp, options?: ReEnqueueOptions): Promise<string[]> {
      const ids = await super.reEnqueueInactive(type, since, options);
      this.#counted.recordReEnqueued(type, ids);
      return ids;
    }
  };
}

/** A `fail` call's error as the store keeps it (its message, name and history). */
function jobError(error: JobErrorInput): JobError {
  if (error instanceof Error) return { message: String(error.message), name: String(error.name) };
  const kept: JobError = { message: error.message, name: error.name ?? 'Error' };
  if (error.history !== undefined) kept.history = [...error.history] as JobError['history'];
  return kept;
}

const ObservedHandle = observed(JobsHandle);
// SharedJobs has the handle's every method, with the same signatures (it implements `Jobs`); typed as
// the handle class only so that one mixin, with method overrides, serves both.
const ObservedShared = observed(SharedJobs as unknown as typeof JobsHandle);

/** The app's counting handle on a database it runs transactions on. */
export function observedJobs(database: Database, activity: JobActivity, clock?: JobsClock): JobsHandle {
  return new ObservedHandle(database, clock === undefined ? {} : { clock }).observeWith(activity);
}

/** The app's counting handle on an embedded store shared with other processes. */
export function observedSharedJobs(sharing: StoreSharing, activity: JobActivity, clock?: JobsClock): SharedJobs {
  return new ObservedShared(sharing as never, (clock === undefined ? {} : { clock }) as never).observeWith(activity) as unknown as SharedJobs;
}
