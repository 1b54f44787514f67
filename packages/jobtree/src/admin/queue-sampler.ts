// Counts of jobs per type and state, read from the store at most once per
// refresh period and shared by everyone who asks in that period (metrics
// scrapes, every live view): a hundred watchers cost one count.
//
// Pending and running jobs are counted from their index keys (no job data
// is read). Finished jobs have no index of their own: counting them reads
// every job of the type, so that full count is redone only as often as
// keeps it under ~2% of the time (50x its own duration apart, and at least
// 5 refresh periods); between two, the last full count is reported, with
// its time in `finishedAt`. The same budget spaces whole samples (20x).

import type { JobState, TypeLimits } from '@jobtree/core';

/** One type's queue. */
export interface TypeQueue {
  type: string;
  /** Activity timeout in seconds (undefined: the type has jobs but no timeout now). */
  timeout: number | undefined;
  pending: number;
  running: number;
  finished: number;
  /** Epoch ms of the full count `finished` comes from. */
  finishedAt: number;
  /** The type's limits (null: none), when the source reads them. */
  limits?: TypeLimits | null;
}

export interface QueueSample {
  /** Epoch ms. */
  at: number;
  types: TypeQueue[];
}

/** What the sampler reads. */
export interface QueueSource {
  getTypes(): Promise<string[]>;
  getTypeTimeout(type: string): Promise<number | undefined>;
  getLimits?(type: string): Promise<TypeLimits | undefined>;
  pendingCount(type: string): Promise<number>;
  getActiveJobIds(type: string): Promise<string[]>;
  foldJobs<A>(type: string, fold: (accumulator: A, job: { state: JobState }) => A, initial: A): Promise<A>;
}

interface FullCount {
  finished: number;
  at: number;
  tookMs: number;
}

export class QueueSampler {
  readonly #source: QueueSource;
  readonly #refreshMs: number;
  readonly #full = new Map<string, FullCount>();
  #last: QueueSample | undefined;
  #lastTookMs = 0;
  #pending: Promise<QueueSample> | undefined;

  constructor(source: QueueSource, refreshMs: number) {
    this.#source = source;
    this.#refreshMs = refreshMs;
  }

  /** The newest sample, if any was taken. */
  get last(): QueueSample | undefined {
    return this.#last;
  }

  /** A sample no older than the refresh period (or than its cost allows); one read at a time, shared. */
  sample(): Promise<QueueSample> {
    const maxAge = Math.max(this.#refreshMs, 20 * this.#lastTookMs);
    if (this.#last !== undefined && Date.now() - this.#last.at < maxAge) return Promise.resolve(this.#last);
    this.#pending ??= this.#read().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #read(): Promise<QueueSample> {
    const began = performance.now();
    const types = await this.#source.getTypes();
    const queues: TypeQueue[] = [];
    for (const type of types) {
      const timeout = await this.#source.getTypeTimeout(type);
      const limits = this.#source.getLimits === undefined ? {} : { limits: (await this.#source.getLimits(type)) ?? null };
      const full = this.#full.get(type);
      if (full === undefined || Date.now() - full.at >= Math.max(5 * this.#refreshMs, 50 * full.tookMs)) {
        const foldBegan = performance.now();
        const counts = await this.#source.foldJobs(
          type,
          (acc, job) => {
            acc[job.state] += 1;
            return acc;
          },
          { waiting: 0, pending: 0, running: 0, finished: 0 } as Record<JobState, number>,
        );
        const at = Date.now();
        this.#full.set(type, { finished: counts.finished, at, tookMs: performance.now() - foldBegan });
        queues.push({ type, timeout, pending: counts.pending, running: counts.running, finished: counts.finished, finishedAt: at, ...limits });
        continue;
      }
      const pending = await this.#source.pendingCount(type);
      const running = (await this.#source.getActiveJobIds(type)).length;
      queues.push({ type, timeout, pending, running, finished: full.finished, finishedAt: full.at, ...limits });
    }
    for (const type of this.#full.keys()) if (!types.includes(type)) this.#full.delete(type);
    this.#lastTookMs = performance.now() - began;
    this.#last = { at: Date.now(), types: queues };
    return this.#last;
  }
}
