// What the app's jobs handle did, as events and running totals: adds,
// accepts (with the add -> start wait when the add happened in this process),
// finishes by what they left (with the run time when the accept happened
// here, and each job given up with its error), crashed runs the scheduler
// retries, cancels, retries of failed or cancelled jobs, re-enqueues and
// removes; the main thread's event loop held up by in-process handlers, and
// handler threads that start late after threads exited before they ran a job.
// Metrics, logs and the live views read it; nothing here touches the store.

import type { JobError } from '@jobtree/core';
import { EventEmitter } from 'eventemitter3';

export interface JobActivityEventTypes {
  added: [type: string, count: number];
  /** `waits`: seconds from add (or scheduled time, if later) to accept, for the jobs added in this process. */
  accepted: [type: string, count: number, waits: number[]];
  /** Finish calls that left their jobs finished, not given up. */
  finished: [type: string, count: number];
  /** Calls that left their jobs finished `failed`: given up. */
  failed: [type: string, count: number];
  /** One job given up (finished `failed`), with its error and its failed attempts. */
  gaveUp: [type: string, id: string, error: JobError, attempts: number];
  /** A pending or running job ended as cancelled. */
  cancelled: [type: string, id: string];
  /** A failed or cancelled job was made to run again (`retry`). */
  retried: [type: string, id: string];
  /** A run crashed; the scheduler puts its job back in the queue to run again after a backoff. */
  crashed: [type: string, id: string];
  /** Seconds from accept to finish of the finish calls (whatever they left), for the jobs accepted in this process. */
  ran: [type: string, runs: number[]];
  reEnqueued: [type: string, ids: string[]];
  removed: [type: string, id: string];
  /** In-process handlers of `type` held the main thread's event loop up for `lagMs` while `ids` ran. */
  loopBlocked: [type: string, lagMs: number, ids: string[]];
  /** A handler thread exited before it ran a job: the next one starts after `delayMs` (the `failures`-th such exit in a row). */
  threadsRestarting: [reason: string, failures: number, delayMs: number];
}

/** Running totals of one type since the app started. */
export interface JobTotals {
  added: number;
  accepted: number;
  /** Jobs that finished, not given up. */
  finished: number;
  /** Runs that crashed and whose jobs run again. */
  crashed: number;
  /** Jobs given up: finished `failed`. */
  failed: number;
  /** Pending or running jobs ended as cancelled. */
  cancelled: number;
  /** Failed or cancelled jobs run again by `retry`. */
  retried: number;
  reEnqueued: number;
  removed: number;
}

/**
 * What a finish call left: the job finished, the job finished `failed`
 * (given up), or the job back in the queue because it was
 * flagged for resubmission or to run again later (a crashed run the
 * scheduler retries, a run it gave back, or a job added again while it ran).
 */
export type FinishOutcome = 'finished' | 'failed' | 'requeued';

/** Start times kept per job are bounded: a job added and never accepted here must not grow memory for ever. */
const MAX_TRACKED = 100_000;

export interface JobActivityOptions {
  /**
   * Whether jobs are timed: each add noted for the add -> accept wait (the
   * `waits` of `accepted`), each accept for the run time (`ran`). Only the
   * metrics read them; untimed, `accepted` reports no waits and `ran` is
   * never emitted, and the activity keeps no time per job: two map writes
   * and two lookups per job, which a busy drain pays for nothing when no
   * metrics are served.
   * @default true
   */
  timed?: boolean;
}

export class JobActivity {
  readonly events = new EventEmitter<JobActivityEventTypes>();
  /** Whether jobs are timed (see JobActivityOptions). */
  readonly timed: boolean;
  readonly #totals = new Map<string, JobTotals>();
  /**
   * Add times by type, then by id: an accept looks its jobs up by the id
   * strings the store handed it (no key built and hashed per job).
   */
  readonly #addedAt = new Map<string, Map<string, number>>();
  /** Add times kept, across types. */
  #addedCount = 0;
  /**
   * By lock: an accept's lock is 16 random bytes, new at every accept, and a
   * finish that resolved holds the lock of the accept it ends (no key built
   * per job from type, id and lock).
   */
  readonly #acceptedAt = new Map<string, number>();

  constructor(options: JobActivityOptions = {}) {
    this.timed = options.timed ?? true;
  }

  /** Totals per type (a copy). */
  totals(): Record<string, JobTotals> {
    const out: Record<string, JobTotals> = {};
    for (const [type, totals] of this.#totals) out[type] = { ...totals };
    return out;
  }

  /**
   * An add of these jobs is being made: its time is noted now, not when it
   * answers, because a worker waiting for such a job may be handed it
   * before the add answers (once the add's commit is readable, ahead of its
   * sync). `recordAdded` counts it once it answered, `notAdded` drops it.
   */
  adding(type: string, ids: readonly string[]): void {
    if (!this.timed) return;
    const now = Date.now();
    let ofType = this.#addedAt.get(type);
    if (ofType === undefined) {
      ofType = new Map();
      this.#addedAt.set(type, ofType);
    }
    for (const id of ids) {
      const size = ofType.size;
      track(ofType, id, now);
      this.#addedCount += ofType.size - size;
      if (this.#addedCount > MAX_TRACKED) this.#forgetOldestAdd();
    }
  }

  /** An add noted by `adding` left these jobs not pending (or failed): no wait to measure. */
  notAdded(type: string, ids: readonly string[]): void {
    const ofType = this.#addedAt.get(type);
    if (ofType === undefined) return;
    for (const id of ids) if (ofType.delete(id)) this.#addedCount--;
  }

  /** An add noted by `adding` answered: these jobs are pending (or already taken). */
  recordAdded(type: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.#of(type).added += ids.length;
    this.events.emit('added', type, ids.length);
  }

  recordAccepted(type: string, jobs: readonly { id: string; lock: string; scheduledTime: number }[]): void {
    if (jobs.length === 0) return;
    const waits: number[] = [];
    if (this.timed) this.#timeAccepted(type, jobs, waits);
    this.#of(type).accepted += jobs.length;
    this.events.emit('accepted', type, jobs.length, waits);
  }

  /** Pushes onto `waits` the add -> accept wait of each of `jobs` added here, and notes when each was accepted. */
  #timeAccepted(type: string, jobs: readonly { id: string; lock: string; scheduledTime: number }[], waits: number[]): void {
    const now = Date.now();
    // Jobs added by another process (or before this app started) have no add time here.
    const ofType = this.#addedAt.get(type);
    const added = ofType !== undefined && ofType.size > 0 ? ofType : undefined;
    for (const job of jobs) {
      const addedAt = added?.get(job.id);
      if (addedAt !== undefined) {
        added?.delete(job.id);
        this.#addedCount--;
        // A job scheduled for later was not waiting before its time came.
        waits.push(Math.max(0, now - Math.max(addedAt, job.scheduledTime * 1000)) / 1000);
      }
      // A lock is new at every accept: never known already, so set at once (no delete first).
      this.#acceptedAt.set(job.lock, now);
      if (this.#acceptedAt.size > MAX_TRACKED) forgetOldest(this.#acceptedAt);
    }
  }

  /** `failure`: for a job given up, its error and failed attempts. */
  recordFinished(type: string, jobs: readonly { id: string; lock: string; outcome: FinishOutcome; failure?: { error: JobError; attempts: number } }[]): void {
    if (jobs.length === 0) return;
    const now = this.timed ? Date.now() : 0;
    const runs: number[] = [];
    let finished = 0;
    let failed = 0;
    for (const job of jobs) {
      if (job.outcome === 'finished') finished++;
      else if (job.outcome === 'failed') {
        failed++;
        if (job.failure !== undefined) this.events.emit('gaveUp', type, job.id, job.failure.error, job.failure.attempts);
      }
      if (!this.timed) continue;
      const acceptedAt = this.#acceptedAt.get(job.lock);
      if (acceptedAt === undefined) continue;
      this.#acceptedAt.delete(job.lock);
      runs.push((now - acceptedAt) / 1000);
    }
    const totals = this.#of(type);
    totals.finished += finished;
    totals.failed += failed;
    if (finished > 0) this.events.emit('finished', type, finished);
    if (failed > 0) this.events.emit('failed', type, failed);
    if (runs.length > 0) this.events.emit('ran', type, runs);
  }

  recordCrashed(type: string, id: string): void {
    this.#of(type).crashed += 1;
    this.events.emit('crashed', type, id);
  }

  recordCancelled(type: string, id: string): void {
    this.#of(type).cancelled += 1;
    this.events.emit('cancelled', type, id);
  }

  recordRetried(type: string, id: string): void {
    this.#of(type).retried += 1;
    this.events.emit('retried', type, id);
  }

  recordReEnqueued(type: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.#of(type).reEnqueued += ids.length;
    this.events.emit('reEnqueued', type, [...ids]);
  }

  recordLoopBlocked(type: string, lagMs: number, ids: readonly string[]): void {
    this.events.emit('loopBlocked', type, lagMs, [...ids]);
  }

  recordThreadsRestarting(reason: string, failures: number, delayMs: number): void {
    this.events.emit('threadsRestarting', reason, failures, delayMs);
  }

  recordRemoved(type: string, id: string): void {
    this.#of(type).removed += 1;
    this.events.emit('removed', type, id);
  }

  /** Drops the oldest add time of all types (each type's map is oldest first), to stay within the bound. */
  #forgetOldestAdd(): void {
    let oldest: Map<string, number> | undefined;
    let oldestAt = Number.POSITIVE_INFINITY;
    for (const ofType of this.#addedAt.values()) {
      const first = ofType.values().next();
      if (!first.done && first.value < oldestAt) {
        oldest = ofType;
        oldestAt = first.value;
      }
    }
    if (oldest !== undefined && forgetOldest(oldest)) this.#addedCount--;
  }

  #of(type: string): JobTotals {
    let totals = this.#totals.get(type);
    if (totals === undefined) {
      totals = { added: 0, accepted: 0, finished: 0, crashed: 0, failed: 0, cancelled: 0, retried: 0, reEnqueued: 0, removed: 0 };
      this.#totals.set(type, totals);
    }
    return totals;
  }
}

/** Sets `key`'s time, as the newest. */
function track(map: Map<string, number>, key: string, at: number): void {
  map.delete(key);
  map.set(key, at);
}

/** Drops the oldest entry of `map`; false when it was empty. */
function forgetOldest(map: Map<string, number>): boolean {
  const oldest = map.keys().next();
  if (oldest.done) return false;
  map.delete(oldest.value);
  return true;
}
