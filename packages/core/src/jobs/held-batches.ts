// The jobs a local queue took and has not handed out yet, kept as the
// batches its accepts brought: one entry per accept, not per job. The jobs
// of one accept share their times, so a held job costs no object of its
// own, and the accept's own array is kept as it is.

import type { Job } from './interfaces.js';

/** The jobs of one accept that nobody has taken yet: `jobs` from `next` on. */
export interface HeldBatch<T extends string> {
  readonly jobs: readonly Job<T>[];
  next: number;
  /** performance.now() before the accept that took the jobs: when the store made them running, at the latest. */
  readonly takenAt: number;
  /** performance.now() past which the jobs are given back rather than handed out. */
  readonly expires: number;
}

/** Held batches, oldest first (a few at most: a local queue holds a bounded number of jobs). */
export class HeldBatches<T extends string> {
  #batches: HeldBatch<T>[] = [];
  #count = 0;

  /** How many jobs the batches hold. */
  get count(): number {
    return this.#count;
  }

  /** The oldest batch (the first to expire). */
  get oldest(): HeldBatch<T> | undefined {
    return this.#batches[0];
  }

  /** Holds `jobs` from index `from` on (the jobs before it went straight to a consumer). */
  push(jobs: readonly Job<T>[], from: number, takenAt: number, expires: number): void {
    this.#batches.push({ jobs, next: from, takenAt, expires });
    this.#count += jobs.length - from;
  }

  /**
   * The oldest batch not past its hold at `now`; every batch past it leaves
   * first, its jobs passed to `expired` (to be given back).
   */
  current(now: number, expired: (jobs: Job<T>[]) => void): HeldBatch<T> | undefined {
    let batch = this.#batches[0];
    while (batch !== undefined && batch.expires <= now) {
      expired(this.#release(batch));
      batch = this.#batches[0];
    }
    return batch;
  }

  /** The next job of `batch`, the oldest one (see {@link current}). */
  shift(batch: HeldBatch<T>): Job<T> {
    const job = batch.jobs[batch.next++] as Job<T>;
    this.#count -= 1;
    if (batch.next === batch.jobs.length) this.#batches.shift();
    return job;
  }

  /** Up to `count` next jobs of `batch`, the oldest one, pushed onto `into`. */
  shiftInto(batch: HeldBatch<T>, count: number, into: Job<T>[]): void {
    const end = Math.min(batch.jobs.length, batch.next + count);
    for (let index = batch.next; index < end; index++) into.push(batch.jobs[index] as Job<T>);
    this.#count -= end - batch.next;
    batch.next = end;
    if (end === batch.jobs.length) this.#batches.shift();
  }

  /** Every held job, removed. */
  drain(): Job<T>[] {
    const jobs: Job<T>[] = [];
    for (const batch of this.#batches) for (let index = batch.next; index < batch.jobs.length; index++) jobs.push(batch.jobs[index] as Job<T>);
    this.#batches = [];
    this.#count = 0;
    return jobs;
  }

  /** The held jobs beyond the oldest `keep`, removed (the newest leave). */
  trim(keep: number): Job<T>[] {
    const removed: Job<T>[] = [];
    let left = this.#count - Math.max(0, keep);
    while (left > 0) {
      const batch = this.#batches.at(-1) as HeldBatch<T>;
      const from = Math.max(batch.next, batch.jobs.length - left);
      for (let index = from; index < batch.jobs.length; index++) removed.push(batch.jobs[index] as Job<T>);
      left -= batch.jobs.length - from;
      if (from === batch.next) this.#batches.pop();
      // Only the part of the newest batch before `from` stays held.
      else this.#batches[this.#batches.length - 1] = { ...batch, jobs: batch.jobs.slice(0, from) };
    }
    this.#count -= removed.length;
    return removed;
  }

  /** Every held job, oldest first, with its batch's `takenAt`. */
  *entries(): Generator<{ readonly job: Job<T>; readonly takenAt: number }> {
    for (const batch of this.#batches) {
      for (let index = batch.next; index < batch.jobs.length; index++) yield { job: batch.jobs[index] as Job<T>, takenAt: batch.takenAt };
    }
  }

  /** The jobs left in the oldest batch, which leaves. */
  #release(batch: HeldBatch<T>): Job<T>[] {
    this.#batches.shift();
    this.#count -= batch.jobs.length - batch.next;
    return batch.jobs.slice(batch.next);
  }
}
