// What the app's jobs handle did, as events and running totals: adds,
// accepts (with the add -> start wait when the add happened in this process),
// finishes (with the run time when the accept did), re-enqueues and removes.
// Metrics, logs and the live views read it; nothing here touches the store.

import { EventEmitter } from 'eventemitter3';

export interface JobActivityEventTypes {
  added: [type: string, count: number];
  /** `waits`: seconds from add (or scheduled time, if later) to accept, for the jobs added in this process. */
  accepted: [type: string, count: number, waits: number[]];
  /** `runs`: seconds from accept to finish, for the jobs accepted in this process. */
  finished: [type: string, count: number, runs: number[]];
  reEnqueued: [type: string, ids: string[]];
  removed: [type: string, id: string];
}

/** Running totals of one type since the app started. */
export interface JobTotals {
  added: number;
  accepted: number;
  finished: number;
  reEnqueued: number;
  removed: number;
}

/** Start times kept per job are bounded: a job added and never accepted here must not grow memory for ever. */
const MAX_TRACKED = 100_000;

export class JobActivity {
  readonly events = new EventEmitter<JobActivityEventTypes>();
  readonly #totals = new Map<string, JobTotals>();
  readonly #addedAt = new Map<string, number>();
  readonly #acceptedAt = new Map<string, number>();

  /** Totals per type (a copy). */
  totals(): Record<string, JobTotals> {
    const out: Record<string, JobTotals> = {};
    for (const [type, totals] of this.#totals) out[type] = { ...totals };
    return out;
  }

  recordAdded(type: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    const now = Date.now();
    for (const id of ids) track(this.#addedAt, `${type}\u0000${id}`, now);
    this.#of(type).added += ids.length;
    this.events.emit('added', type, ids.length);
  }

  recordAccepted(type: string, jobs: readonly { id: string; lock: string; scheduledTime: number }[]): void {
    if (jobs.length === 0) return;
    const now = Date.now();
    const waits: number[] = [];
    for (const job of jobs) {
      const key = `${type}\u0000${job.id}`;
      const addedAt = this.#addedAt.get(key);
      if (addedAt !== undefined) {
        this.#addedAt.delete(key);
        // A job scheduled for later was not waiting before its time came.
        waits.push(Math.max(0, now - Math.max(addedAt, job.scheduledTime * 1000)) / 1000);
      }
      track(this.#acceptedAt, `${key}\u0000${job.lock}`, now);
    }
    this.#of(type).accepted += jobs.length;
    this.events.emit('accepted', type, jobs.length, waits);
  }

  recordFinished(type: string, jobs: readonly { id: string; lock: string }[]): void {
    if (jobs.length === 0) return;
    const now = Date.now();
    const runs: number[] = [];
    for (const job of jobs) {
      const key = `${type}\u0000${job.id}\u0000${job.lock}`;
      const acceptedAt = this.#acceptedAt.get(key);
      if (acceptedAt === undefined) continue;
      this.#acceptedAt.delete(key);
      runs.push((now - acceptedAt) / 1000);
    }
    this.#of(type).finished += jobs.length;
    this.events.emit('finished', type, jobs.length, runs);
  }

  recordReEnqueued(type: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    this.#of(type).reEnqueued += ids.length;
    this.events.emit('reEnqueued', type, [...ids]);
  }

  recordRemoved(type: string, id: string): void {
    this.#of(type).removed += 1;
    this.events.emit('removed', type, id);
  }

  #of(type: string): JobTotals {
    let totals = this.#totals.get(type);
    if (totals === undefined) {
      totals = { added: 0, accepted: 0, finished: 0, reEnqueued: 0, removed: 0 };
      this.#totals.set(type, totals);
    }
    return totals;
  }
}

function track(map: Map<string, number>, key: string, at: number): void {
  map.delete(key);
  map.set(key, at);
  if (map.size > MAX_TRACKED) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
}
