// Hears at once that someone else ended a job the scheduler holds: the store
// counts every running job of the type that is removed or cancelled, and a
// watch on that count fires on the commit. The scheduler then reads the
// states of the jobs it holds and drops those no longer running, aborting
// their handlers with cause `cancel`, instead of learning it at its next
// heartbeat (a third of the type's timeout away). The watch is the store's
// own, so the same holds for a remove in this process, in another process
// of a shared store (the owner keeps the watch and pushes its firing) and on
// another node. The heartbeat stays as the safety net: it also hears of jobs
// taken over, which this count does not tell.

import { type Jobs, JobsError, type Watch } from '@jobtree/core';
import type { Held, HeldJobs } from './held-jobs.js';

/** How long a watch that gave up without firing waits before it is armed again. */
const REARM_DELAY_MS = 100;

/** What the cancellation watch needs of its scheduler. */
export interface CancellationWatchContext {
  readonly jobs: Jobs;
  readonly type: string;
  readonly held: HeldJobs;
  /** The job is no longer the scheduler's: drop it, and abort its handler with cause `cancel`. */
  cancel(held: Held): void;
  emitError(error: unknown): void;
}

export class CancellationWatch {
  readonly #context: CancellationWatchContext;
  #stopped = false;
  #watch: Watch | undefined;
  readonly #done: Promise<void>;

  constructor(context: CancellationWatchContext) {
    this.#context = context;
    this.#done = this.#run();
  }

  /** No more watching; resolves once the watch is let go. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#watch?.cancel();
    return this.#done;
  }

  async #run(): Promise<void> {
    const { jobs, type } = this.#context;
    let seen: number | undefined;
    while (!this.#stopped) {
      let armed: { cancellations: number; watch: Watch };
      try {
        armed = await jobs.watchCancellations(type);
      } catch (error) {
        if (this.#stopped || JobsError.is(error, 'closed')) return;
        this.#context.emitError(error);
        await delay(REARM_DELAY_MS);
        continue;
      }
      if (this.#stopped) {
        armed.watch.cancel();
        return;
      }
      this.#watch = armed.watch;
      // Checked after the watch is armed: an end committed before it shows
      // in the count read with it, one after fires the watch.
      if (armed.cancellations !== seen) await this.#check();
      seen = armed.cancellations;
      const fired = await armed.watch.promise.catch(() => false);
      this.#watch = undefined;
      if (!fired && !this.#stopped) await delay(REARM_DELAY_MS);
    }
  }

  /** Drops the held jobs the store no longer shows running. */
  async #check(): Promise<void> {
    const { jobs, type, held } = this.#context;
    const holding = [...held.values()];
    if (holding.length === 0) return;
    let states: Awaited<ReturnType<Jobs['getJobStates']>>;
    try {
      states = await jobs.getJobStates(
        type,
        holding.map((one) => one.job.id),
      );
    } catch (error) {
      if (!this.#stopped && !JobsError.is(error, 'closed')) this.#context.emitError(error);
      return;
    }
    states.forEach((entry, index) => {
      const one = holding[index] as Held;
      // A job the scheduler let go of meanwhile (finished, given back) is not its to drop.
      if (entry.state !== 'running' && held.get(one.job.id) === one) this.#context.cancel(one);
    });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
