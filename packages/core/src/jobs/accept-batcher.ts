// Coalesces concurrent accepts of one job type in this process into one
// transaction. Every transaction costs a durable commit (DESIGN.md §10), and
// in-process workers that each ran their own accept would also conflict on
// the front of the queue. While one batch commits, new requests queue up and
// the next transaction serves all of them: one commit, no conflicts between
// them. A lone worker still gets a transaction of its own at once.

import type { Database, Transaction, Watch } from '../storage/interfaces.js';
import type { Job } from './interfaces.js';

/** Accepts served by one transaction at most (bounds its size and duration). */
export const MAX_ACCEPT_BATCH = 64;

export interface AcceptBatch {
  /** Up to `count` jobs, in the order they were taken from the queue. */
  jobs: Job[];
  /** Set when fewer jobs than asked for were found and a watch was asked for. */
  watch: Watch | undefined;
  nextScheduledTime: number | undefined;
}

export interface AcceptOutcome {
  job: Job | undefined;
  /** For a request left without a job that asked to wait: fires on the next enqueue. */
  watch: Watch | undefined;
  nextScheduledTime: number | undefined;
}

interface Request {
  wantWatch: boolean;
  resolve(outcome: AcceptOutcome): void;
  reject(error: unknown): void;
}

export type AcceptBatchBody = (tx: Transaction, count: number, wantWatch: boolean) => Promise<AcceptBatch>;

export class AcceptBatcher {
  readonly #database: Database;
  readonly #body: AcceptBatchBody;
  readonly #onIdle: () => void;
  #waiting: Request[] = [];
  #draining = false;
  /** Set by close(): what requests that have not reached a transaction are rejected with. */
  #closedError: (() => Error) | undefined;

  constructor(database: Database, body: AcceptBatchBody, onIdle: () => void) {
    this.#database = database;
    this.#body = body;
    this.#onIdle = onIdle;
  }

  /** One accept attempt: resolves with a job, or with none (and a watch when `wantWatch`). */
  take(wantWatch: boolean): Promise<AcceptOutcome> {
    return new Promise((resolve, reject) => {
      if (this.#closedError) {
        reject(this.#closedError());
        return;
      }
      this.#waiting.push({ wantWatch, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  /**
   * Rejects the requests still waiting for a transaction, and every later
   * one, with `error()`: after close no new job is handed out. A batch
   * already in flight still delivers its jobs: they are committed, and
   * dropping them would leave them running with no worker until the
   * activity monitor's timeout.
   */
  close(error: () => Error): void {
    this.#closedError = error;
    for (const request of this.#waiting.splice(0)) request.reject(error());
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, MAX_ACCEPT_BATCH);
        const wantWatch = batch.some((request) => request.wantWatch);
        let result: AcceptBatch;
        try {
          result = await this.#database.doTransaction((tx) => this.#body(tx, batch.length, wantWatch));
        } catch (error) {
          for (const request of batch) request.reject(error);
          continue;
        }
        distribute(batch, result);
      }
    } finally {
      this.#draining = false;
      this.#onIdle();
    }
  }
}

function distribute(batch: Request[], result: AcceptBatch): void {
  const left = batch.slice(result.jobs.length);
  const waiters = left.filter((request) => request.wantWatch).length;
  const shared = result.watch && waiters > 0 ? shareWatch(result.watch, waiters) : undefined;
  if (result.watch && waiters === 0) result.watch.cancel();
  batch.forEach((request, index) => {
    const job = result.jobs[index];
    request.resolve({
      job,
      watch: job === undefined && request.wantWatch ? shared?.() : undefined,
      nextScheduledTime: result.nextScheduledTime,
    });
  });
}

/** Hands one storage watch to `holders` waiters; it is cancelled when the last one cancels. */
function shareWatch(watch: Watch, holders: number): () => Watch {
  let remaining = holders;
  return () => {
    let cancelled = false;
    return {
      promise: watch.promise,
      cancel() {
        if (cancelled) return;
        cancelled = true;
        remaining -= 1;
        if (remaining === 0) watch.cancel();
      },
    };
  };
}
