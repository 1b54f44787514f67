// The accept path of a `Jobs` handle (jobs.ts): `accept` and `acceptMany`
// take due jobs through one AcceptBatcher per type and schedule bound, so
// that concurrent accepts share transactions (accept-batcher.ts). An accept
// left without a job waits on the type's pending watch (and, for a job
// scheduled in the future, until it is due), parked so that a write of the
// handle that enqueues a job for it serves it in the write's own
// transaction (parked-accepts.ts).

import { FdbError, JobsError } from '../errors.js';
import { AcceptBatcher } from './accept-batcher.js';
import type { AcceptOutcome } from './accept-batcher.js';
import { AcceptWait, type ClosingWaits, releaseWait } from './accept-wait.js';
import { closedError } from './handle-context.js';
import type { HandleContext } from './handle-context.js';
import type { AcceptOptions, Job } from './interfaces.js';
import { ACCEPT_OPTIONS, checkAcceptTimeout, checkBooleanOption, checkOptions, checkScheduledTime, describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { acceptJobs } from './job-transitions.js';
import type { ParkedAccepts } from './parked-accepts.js';
import type { SettleTurn } from './settle-turn.js';

/** A blocking accept whose next job is due sooner than this still waits this long (couch_jobs' floor). */
const MIN_SCHEDULE_WAIT_MS = 100;

/** See {@link acceptStartedAt}. */
const acceptStarts = new WeakMap<readonly Job[], number>();

/**
 * A moment (`performance.now()`) before the transaction that made the jobs
 * of an `acceptMany` result of this process running began (the jobs went
 * running after it): a waiting accept's jobs are as fresh as that
 * transaction, however long it waited before. `LocalQueue` counts its holds
 * from here.
 */
export function acceptStartedAt(jobs: readonly Job[]): number | undefined {
  return acceptStarts.get(jobs);
}

/** See {@link acceptEmptiedQueue}. */
const emptiedQueue = new WeakSet<readonly Job[]>();

/**
 * Whether an `acceptMany` result of this process most likely left the
 * type's queue empty: the accept found no due job, waited, and a write of
 * this handle handed it every job that write enqueued to the type (see
 * ParkedAccept.tookAllBrought). `LocalQueue` then does not look at once
 * for more, as it does after a full take.
 */
export function acceptEmptiedQueue(jobs: readonly Job[]): boolean {
  return emptiedQueue.has(jobs);
}

/** Marks `jobs`, the answer of an owner's `acceptMany` to a process sharing its store, as its owner found them (see acceptEmptiedQueue). */
export function noteEmptiedQueue(jobs: readonly Job[]): void {
  emptiedQueue.add(jobs);
}

/** The accepts of one `Jobs` handle. */
export class AcceptCalls {
  readonly #handle: HandleContext;
  /** Accepts waiting for a job, which the handle's writes serve. */
  readonly #parked: ParkedAccepts;
  /** Turns in which the handle's batchers answered calls (see SettleTurn). */
  readonly #turn: SettleTurn;
  /** Wakes blocked accepts when the handle closes. */
  readonly #closing: ClosingWaits = new Set();
  readonly #batchers = new Map<string, AcceptBatcher>();

  constructor(handle: HandleContext, parked: ParkedAccepts, turn: SettleTurn) {
    this.#handle = handle;
    this.#parked = parked;
    this.#turn = turn;
  }

  /**
   * Up to `count` due jobs of `type`, made running under fresh locks: what
   * `accept` and `acceptMany` do. With none due, waits up to the `timeout`
   * of `acceptOptions` for at least one, then resolves `[]`.
   */
  async take(type: string, count: number, acceptOptions: AcceptOptions | undefined): Promise<Job[]> {
    const keys = this.#handle.typeKeys(type);
    const { timeout, bound, signal } = checkAcceptOptions(acceptOptions);
    const deadline = performance.now() + timeout;
    for (;;) {
      this.#handle.checkOpen();
      if (signal?.aborted) return [];
      const startedAt = performance.now();
      const remaining = deadline - startedAt;
      let result: AcceptOutcome;
      try {
        // Looked up on every round: a batcher that went idle while this
        // accept waited has left the map, and sharing the current one keeps
        // all accepts of the type in one transaction.
        result = await this.#batcher(keys, bound).take(count, remaining > 0);
      } catch (error) {
        // Every attempt of its transaction lost to other takes' commits (of
        // another handle on the store, taking the same jobs or the same
        // group slots): as a take that found no job, it takes again while
        // its time lasts, and ends empty when it is over.
        if (!FdbError.is(error, 'not_committed')) throw this.#handle.failure(error);
        if (deadline - performance.now() > 0) continue;
        return [];
      }
      if (result.jobs.length > 0) {
        acceptStarts.set(result.jobs, startedAt);
        return result.jobs;
      }
      if (result.watch === undefined || remaining <= 0) {
        result.watch?.cancel();
        return result.jobs;
      }
      let wait = remaining;
      // A job scheduled in the future wakes us by time; the watch covers new
      // enqueues. An explicit maxSchedTime (or noSchedule) never moves, so then only the watch.
      if (result.nextScheduledTime !== undefined && bound === undefined) {
        const untilDue = result.nextScheduledTime * 1000 - Date.now();
        wait = Math.min(wait, Math.max(MIN_SCHEDULE_WAIT_MS, untilDue));
      }
      // Held back by the type's rate: the time its window lets a start through
      // wakes us (a finish or an enqueue does not), by the handle's clock.
      if (result.limitedUntil !== undefined) {
        const clock = this.#handle.clock;
        const clockMs = result.limitedUntil - clock.now();
        wait = Math.min(wait, Math.max(1, clock.realMs === undefined ? clockMs : clock.realMs(clockMs)));
      }
      // Parked while it waits: a write of this handle that enqueues a job
      // for it may take the job for it in its own transaction.
      const parked = this.#parked.park(keys, bound, count, signal, deadline);
      let waitFailed = false;
      let waitFailure: unknown;
      let waiting: AcceptWait | undefined;
      try {
        waiting = new AcceptWait(result.watch, wait, signal, parked.settled, this.#closing, this.#handle.isClosed());
        await waiting.ended;
      } catch (error) {
        // The watch failed (the storage gave up on it). A write may have
        // taken jobs for this accept meanwhile: they are this accept's to
        // return, error or not, or they would run under a lock nobody holds.
        waitFailed = true;
        waitFailure = error;
      }
      // Served (the usual wake-up): its jobs at once, without a turn of the microtask queue for `leave()`.
      const handed = parked.handed ?? (await parked.leave());
      if (handed !== undefined) {
        // What the wait armed is let go once the caller has its jobs (later
        // in this turn): for an idle worker, between the commit and its
        // handler, this return is all that is left.
        if (waiting !== undefined) setImmediate(releaseWait, waiting);
        acceptStarts.set(handed, parked.claimedAt);
        if (parked.tookAllBrought) emptiedQueue.add(handed);
        return handed;
      }
      waiting?.release();
      if (waitFailed) throw this.#handle.failure(waitFailure);
    }
  }

  /** The batcher of concurrent accepts of one type with the same schedule bound. */
  #batcher(keys: TypeKeys, bound: number | 'any' | undefined): AcceptBatcher {
    const name = `${keys.type}\u0000${bound ?? 'now'}`;
    let batcher = this.#batchers.get(name);
    if (batcher === undefined) {
      batcher = new AcceptBatcher(
        this.#handle.database,
        (tx, count, watchUnder, claims) =>
          acceptJobs(tx, keys, bound === 'any' ? undefined : (bound ?? Date.now() / 1000), count, watchUnder, this.#handle.clock.now(), claims),
        () => this.#batchers.delete(name),
        this.#turn,
      );
      this.#batchers.set(name, batcher);
    }
    return batcher;
  }

  /** Ends the accepts that wait for a transaction of a batcher (they reject with `closed`), as the handle closes. */
  closeBatchers(): void {
    for (const batcher of this.#batchers.values()) batcher.close(() => closedError());
  }

  /** Wakes the accepts waiting for a job, as the handle closes: each then ends with `closed`. */
  wakeWaiting(): void {
    for (const wait of this.#closing) wait.wake();
    this.#closing.clear();
  }
}

/**
 * An accept's options, checked as `accept` and `acceptMany` check them
 * (also where the accept is sent to another process, see shared-jobs.ts):
 * how long it waits, the scheduled time it takes jobs up to (`any` with
 * noSchedule), and its signal.
 */
export function checkAcceptOptions(acceptOptions: AcceptOptions | undefined): {
  timeout: number;
  bound: number | 'any' | undefined;
  signal: AbortSignal | undefined;
} {
  const options = checkOptions(acceptOptions, ACCEPT_OPTIONS);
  const timeout = checkAcceptTimeout(options.timeout);
  const noSchedule = checkBooleanOption(options.noSchedule, 'noSchedule') === true;
  const maxSchedTime = checkScheduledTime(options.maxSchedTime, 'maxSchedTime');
  if (noSchedule && maxSchedTime !== undefined) {
    throw new JobsError('invalid_scheduled_time', 'noSchedule ignores scheduled times: do not pass maxSchedTime with it');
  }
  return { timeout, bound: noSchedule ? 'any' : maxSchedTime, signal: checkSignal(options.signal) };
}

function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined || signal instanceof AbortSignal) return signal;
  throw new JobsError('invalid_option', `accept's signal is an AbortSignal, got ${describe(signal)}`);
}
