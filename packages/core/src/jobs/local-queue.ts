// A local queue for in-process workers, like graphile-worker's: it takes
// jobs of one type in batches with `acceptMany` and hands them out one at a
// time, so N workers share one accept transaction per batch instead of
// making N. The next batch is taken while the workers run the previous one
// and while their finishes commit, so the process does not stop to wait for
// each commit in turn.
//
// A taken job is running in the store from the moment its batch commits.
// So the queue holds at most `size` jobs that no worker has started, gives
// back (re-enqueues) a job it held longer than `holdMs` (by default half
// the type's activity timeout, so the activity monitor never finds one of
// them inactive), and gives back everything it still holds on `stop()`.
// A job handed out after a long hold has its activity stamped again first
// (as `update` does), so its worker has the type timeout for its first
// update, as after `accept`.

import { JobsError } from '../errors.js';
import { OptionNames } from '../option-names.js';
import { MAX_ACCEPT_MANY } from './accept-batcher.js';
import { describe } from './job-input.js';
import { countedFinish } from './counted-finish.js';
import type { CountedFinish, FINISH_COUNTED } from './counted-finish.js';
import { acceptStartedAt } from './accept-calls.js';
import type { Jobs } from './jobs.js';
import type { Job } from './interfaces.js';
import type { WriteCounter } from './write-requests.js';

/**
 * What a local queue uses of the jobs API: a `Jobs` handle, or anything
 * that has these calls with the same meaning (the application of
 * `@jobtree/supervisor` has them all).
 */
export type LocalQueueSource = Pick<Jobs, 'acceptMany' | 'update' | 'finish' | 'finishMany' | 'resubmit' | 'getTypeTimeout'>;

export interface LocalQueueOptions {
  /**
   * Jobs taken but not yet handed to a worker, at most (including those of
   * an accept in flight). A batch is taken once no more than half of this
   * is left. At most {@link MAX_ACCEPT_MANY}.
   * @default 500
   */
  size?: number;
  /**
   * Milliseconds a taken job may wait in the queue before it is given back
   * to the store's queue. @default half the type's activity timeout, or
   * 30,000 for a type without one
   */
  holdMs?: number;
  /** As `accept`'s `noSchedule`: any pending job qualifies whatever its scheduled time. @default false */
  noSchedule?: boolean;
}

/** The queue's default size: 500 jobs share one accept transaction and its durable commit. */
export const DEFAULT_LOCAL_QUEUE_SIZE = 500;
/** How long a job of a type without an activity timeout may be held. */
const DEFAULT_HOLD_MS = 30_000;

const LOCAL_QUEUE_OPTIONS = new OptionNames('LocalQueue', ['size', 'holdMs', 'noSchedule'], { batchSize: 'size', max: 'size' });

/**
 * A job held longer than this share of its hold has its activity stamped
 * again when handed out. The activity monitor re-enqueues a job whose
 * stamp is at least one timeout old, checking every quarter timeout: with
 * the default hold (half the timeout), a job handed out within a sixteenth
 * of the timeout of its accept still has 15/16 to 5/4 of a timeout, as
 * after `accept`; jobs handed out at once (the busy case) cost no write.
 */
const RESTAMP_SHARE = 1 / 8;
/**
 * Accepts in flight at most, each for at most this share of the queue's
 * size: while one batch is being written to the store, the next is taken,
 * so the workers' finishes, the next accept and the storage write overlap
 * instead of taking turns.
 */
const MAX_FILLS = 2;

/**
 * The jobs of one accept that no worker has taken yet: `jobs` from `next`
 * on. They share their times, so a held job costs no object of its own,
 * and the accept's own array is kept as it is.
 */
interface HeldBatch<T extends string> {
  readonly jobs: readonly Job<T>[];
  next: number;
  /** performance.now() before the accept that took the jobs: when the store made them running, at the latest. */
  readonly takenAt: number;
  /** performance.now() past which the jobs are given back rather than handed out. */
  readonly expires: number;
}

interface Taker<T extends string> {
  resolve(job: Job<T> | undefined): void;
  reject(error: unknown): void;
}

export class LocalQueue<T extends string = string> {
  readonly #jobs: LocalQueueSource;
  readonly #type: T;
  readonly #size: number;
  readonly #noSchedule: boolean;
  #holdMs: number | undefined;
  /** Held longer than this, a job is stamped again before it is handed out (see RESTAMP_SHARE). */
  #restampMs = Number.POSITIVE_INFINITY;
  /** Held jobs by accept, oldest first (a few batches at most: the queue holds `size` jobs). */
  #held: HeldBatch<T>[] = [];
  /** How many jobs `#held` holds. */
  #heldCount = 0;
  /** Workers waiting in `take()`, first come first served. */
  readonly #takers: Taker<T>[] = [];
  /** Accepts in flight (at most {@link MAX_FILLS}), and the jobs they asked for between them. */
  readonly #filling = new Set<Promise<void>>();
  #requested = 0;
  /**
   * The last accept found no due job (or none has run yet): one accept, which
   * may wait for jobs, is enough until one finds some.
   */
  #foundNone = true;
  #fillScheduled = false;
  #timer: NodeJS.Timeout | undefined;
  /** Finishes and give-backs not settled yet: `stop()` waits for them. */
  #writes = 0;
  /** The source's finish that tells the queue when it settles (a `Jobs` handle's), if it has one. */
  readonly #countedFinish: CountedFinish[typeof FINISH_COUNTED] | undefined;
  /** Resolves `stop()` once `#writes` is back to 0. */
  #writesDone: (() => void) | undefined;
  readonly #abort = new AbortController();
  #stopped = false;
  #stopping: Promise<void> | undefined;

  constructor(jobs: LocalQueueSource, type: T, options: LocalQueueOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new JobsError('invalid_option', `the options of LocalQueue are an object, got ${describe(options)}`);
    }
    LOCAL_QUEUE_OPTIONS.check(options);
    const size = options.size ?? DEFAULT_LOCAL_QUEUE_SIZE;
    if (!Number.isSafeInteger(size) || size < 1 || size > MAX_ACCEPT_MANY) {
      throw new JobsError('invalid_option', `a local queue's size is an integer from 1 to ${MAX_ACCEPT_MANY}, got ${describe(size)}`);
    }
    const holdMs = options.holdMs;
    if (holdMs !== undefined && !(typeof holdMs === 'number' && holdMs > 0 && Number.isFinite(holdMs))) {
      throw new JobsError('invalid_option', `holdMs is a number of milliseconds > 0, got ${describe(holdMs)}`);
    }
    if (options.noSchedule !== undefined && typeof options.noSchedule !== 'boolean') {
      throw new JobsError('invalid_option', `noSchedule is a boolean, got ${describe(options.noSchedule)}`);
    }
    this.#jobs = jobs;
    this.#type = type;
    this.#size = size;
    this.#holdMs = holdMs;
    this.#noSchedule = options.noSchedule === true;
    this.#countedFinish = countedFinish(jobs);
  }

  /** Jobs taken and not yet handed out. */
  get held(): number {
    return this.#heldCount;
  }

  /**
   * The next job: at once when the queue holds one, else once a batch
   * brings one. Resolves `undefined` once the queue is stopped. Rejects
   * with the accept's error when taking a batch fails (e.g. `closed`); the
   * next call tries again.
   */
  take(): Promise<Job<T> | undefined> {
    if (this.#stopped) return Promise.resolve(undefined);
    const now = performance.now();
    const batch = this.#current(now);
    if (batch !== undefined) {
      const job = batch.jobs[batch.next++] as Job<T>;
      this.#heldCount -= 1;
      if (batch.next === batch.jobs.length) this.#held.shift();
      this.#scheduleFill();
      return now - batch.takenAt <= this.#restampMs ? Promise.resolve(job) : this.#restamp(job);
    }
    return new Promise((resolve, reject) => {
      this.#takers.push({ resolve, reject });
      this.#scheduleFill();
    });
  }

  /**
   * `jobs.finish(job, data)`, counted by the queue so that `stop()` waits
   * for it. Concurrent finishes share transactions (the write batcher), so
   * a worker need not wait for one before taking its next job. The promise
   * is the finish's own: a rejection (`halt`) is the worker's to handle.
   */
  finish(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    if (this.#countedFinish === undefined) return this.#track(this.#jobs.finish(job, data));
    this.#writes += 1;
    return this.#countedFinish.call(this.#jobs, job, data, this.#counter);
  }

  /**
   * Stops taking jobs: waiting `take()`s resolve `undefined`, a waiting
   * accept ends, every job still held (and any its last batch brings) is
   * given back to the store's queue, and the call resolves once those and
   * the finishes made through the queue have settled. Jobs handed out are
   * the workers' to finish. Safe to call again.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    for (const taker of this.#takers.splice(0)) taker.resolve(undefined);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#giveBack(this.#drain());
    while (this.#filling.size > 0) await Promise.all(this.#filling);
    if (this.#writes > 0) {
      await new Promise<void>((resolve) => {
        this.#writesDone = resolve;
      });
    }
  }

  /** The oldest held batch whose jobs are not past their hold at `now`; the expired ones are given back. */
  #current(now: number): HeldBatch<T> | undefined {
    let batch = this.#held[0];
    while (batch !== undefined && batch.expires <= now) {
      this.#giveBack(this.#release(batch));
      batch = this.#held[0];
    }
    return batch;
  }

  /** The jobs left in the oldest held batch, which leaves the queue. */
  #release(batch: HeldBatch<T>): Job<T>[] {
    this.#held.shift();
    this.#heldCount -= batch.jobs.length - batch.next;
    return batch.jobs.slice(batch.next);
  }

  /**
   * A held job for a worker after an `update` that stamps its activity
   * again (it was taken a while ago). A job that is no longer ours (`halt`:
   * re-enqueued or removed meanwhile) is skipped for the next one.
   */
  #restamp(job: Job<T>): Promise<Job<T> | undefined> {
    return this.#track(this.#jobs.update(job)).catch((error: unknown) => {
      if (JobsError.is(error, 'halt')) return this.take();
      throw error;
    });
  }

  /** Every held job, removed from the queue. */
  #drain(): Job<T>[] {
    const jobs: Job<T>[] = [];
    for (const batch of this.#held) for (let index = batch.next; index < batch.jobs.length; index++) jobs.push(batch.jobs[index] as Job<T>);
    this.#held = [];
    this.#heldCount = 0;
    return jobs;
  }

  /**
   * Starts a fill on the next turn, so that the workers first take what the
   * queue holds and the accept then asks for what is missing.
   */
  #scheduleFill(): void {
    if (this.#fillScheduled || this.#filling.size >= MAX_FILLS || this.#stopped || !this.#wantsMore()) return;
    this.#fillScheduled = true;
    setImmediate(this.#startFills);
  }

  /**
   * Starts one accept, and schedules the next one (if there is room for it)
   * two turns later: the storage engine writes what commits in one event
   * turn as one write, so two accepts started together would commit in the
   * same write and take turns with the workers just as one accept of their
   * size would. Started later, the second reads and commits while the
   * first's write is under way.
   */
  readonly #startFills = (): void => {
    this.#fillScheduled = false;
    if (this.#filling.size >= MAX_FILLS || this.#stopped || !this.#wantsMore()) return;
    const count = Math.min(this.#chunk, this.#size - this.held - this.#requested);
    this.#requested += count;
    const fill: Promise<void> = this.#fill(count).finally(() => {
      this.#requested -= count;
      this.#filling.delete(fill);
      // For workers still waiting, or room left while the store has jobs:
      // a fill that found the store's queue empty is not repeated until a
      // worker asks again.
      if (this.#takers.length > 0 || !this.#foundNone) this.#scheduleFill();
    });
    this.#filling.add(fill);
    if (this.#filling.size < MAX_FILLS && !this.#foundNone && this.#wantsMore()) {
      this.#fillScheduled = true;
      setImmediate(this.#startFillsLater);
    }
  };

  readonly #startFillsLater = (): void => {
    setImmediate(this.#startFills);
  };

  /** Jobs one accept asks for at most: half the queue, so that two accepts can be in flight. */
  get #chunk(): number {
    return Math.max(1, Math.ceil(this.#size / MAX_FILLS));
  }

  /**
   * Whether to take more: the held jobs and those asked for leave room for
   * an accept of a chunk (a batch is taken once no more than half is left),
   * or workers wait and no accept is in flight for them.
   */
  #wantsMore(): boolean {
    const free = this.#size - this.held - this.#requested;
    if (free <= 0) return false;
    if (this.#requested === 0 && this.#takers.length > 0) return true;
    return free >= this.#chunk && !(this.#foundNone && this.#requested > 0);
  }

  async #fill(count: number): Promise<void> {
    try {
      const holdMs = await this.#hold();
      if (this.#stopped) return;
      const waiting = this.#takers.length > 0;
      // Expiry is counted from before the transaction that made the jobs
      // running (before the call when the source does not say, e.g. across
      // threads): a job is never held longer than holdMs after the store
      // made it running. A waiting accept waits at most half the hold (then
      // the next fill asks again), so a batch that arrives after a long wait
      // still has at least half its hold left.
      const askedAt = performance.now();
      const taken = await this.#jobs.acceptMany(this.#type, count, {
        timeout: waiting ? holdMs / 2 : 0,
        noSchedule: this.#noSchedule,
        signal: this.#abort.signal,
      });
      const takenAt = acceptStartedAt(taken) ?? askedAt;
      const expires = takenAt + holdMs;
      this.#foundNone = taken.length === 0;
      if (this.#stopped) {
        this.#giveBack(taken);
        return;
      }
      this.#deliver(taken, takenAt, expires);
    } catch (error) {
      // Like an accept that found nothing: the queue does not try again on
      // its own (a closed handle or failing storage would make it spin), only
      // when a worker asks.
      this.#foundNone = true;
      for (const taker of this.#takers.splice(0)) taker.reject(error);
    }
  }

  /** The hold limit: the option, or half the type's timeout read once. */
  async #hold(): Promise<number> {
    if (this.#holdMs === undefined) {
      const seconds = await this.#jobs.getTypeTimeout(this.#type);
      this.#holdMs = seconds === undefined ? DEFAULT_HOLD_MS : (seconds * 1000) / 2;
    }
    this.#restampMs = this.#holdMs * RESTAMP_SHARE;
    return this.#holdMs;
  }

  /**
   * Hands new jobs to waiting workers first, and holds the rest. A batch
   * whose accept took longer than the hold (a slow commit) is given back
   * whole: a job past its hold is never handed out.
   */
  #deliver(taken: readonly Job<T>[], takenAt: number, expires: number): void {
    if (taken.length === 0) return;
    if (performance.now() >= expires) {
      this.#giveBack(taken);
      return;
    }
    let index = 0;
    // Handed out as they arrive (the busy case: every worker waits): no
    // promise per job unless the job needs stamping first.
    const fresh = performance.now() - takenAt <= this.#restampMs;
    while (index < taken.length && this.#takers.length > 0) {
      const taker = this.#takers.shift() as Taker<T>;
      const job = taken[index++] as Job<T>;
      if (fresh) taker.resolve(job);
      else this.#restamp(job).then(taker.resolve, taker.reject);
    }
    if (index === taken.length) return;
    this.#held.push({ jobs: taken, next: index, takenAt, expires });
    this.#heldCount += taken.length - index;
    this.#armTimer();
  }

  /** Wakes when the oldest held job's hold ends, to give back what nobody took in time. */
  #armTimer(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const oldest = this.#held[0];
    if (oldest === undefined) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        // #current gives back every batch past its hold.
        this.#current(performance.now());
        this.#armTimer();
        // Jobs that nobody took within their hold show there is no demand:
        // the queue takes more on the next take(), not now (it would take
        // back what it gives back here, once the give-back commits).
        if (this.#takers.length > 0) this.#scheduleFill();
      },
      Math.max(0, oldest.expires - performance.now()),
    );
    // A held job does not keep the process alive: were it to exit, the
    // activity monitor re-enqueues the job after its timeout.
    this.#timer.unref();
  }

  /**
   * Re-enqueues jobs the queue took but no worker started: each is flagged
   * to run again and finished, which makes it pending with its data,
   * priority and scheduled time unchanged. A job that is no longer ours
   * (`halt`: re-enqueued or removed meanwhile) needs nothing; on any other
   * failure the job stays running until the activity monitor re-enqueues it.
   */
  #giveBack(taken: readonly Job<T>[]): void {
    if (taken.length === 0) return;
    const jobs = this.#jobs;
    void this.#track(
      (async () => {
        const flagged = await Promise.allSettled(taken.map((job) => jobs.resubmit(job)));
        const items = flagged.flatMap((outcome) => (outcome.status === 'fulfilled' ? [{ job: outcome.value }] : []));
        if (items.length > 0) await jobs.finishMany(items);
      })(),
    ).catch(() => {});
  }

  /** Counts a write until it settles (a `then` with one shared callback; a `Jobs` handle's finishes need none, see finish). */
  #track<R>(write: Promise<R>): Promise<R> {
    this.#writes += 1;
    write.then(this.#settled, this.#settled);
    return write;
  }

  readonly #settled = (): void => {
    this.#writes -= 1;
    if (this.#writes === 0) this.#writesDone?.();
  };

  /** Told by the source when a counted finish settles. */
  readonly #counter: WriteCounter = { settled: this.#settled };
}
