// Coalesces concurrent accepts of one job type in this process into one
// transaction. Every transaction costs a durable commit, and
// in-process workers that each ran their own accept would also conflict on
// the front of the queue. Requests that arrive while a batch runs queue up
// and the next transaction serves all of them: one commit, no conflicts
// between them. A lone worker still gets a transaction of its own at once.
//
// Batches are pipelined: once a batch has read and picked its jobs, the
// next one may start while it commits (a durable commit is most of an
// accept's time, and waiting for it would give accepts one commit slot in
// two). The next batch reads a snapshot in which the committing batch's
// picks are still pending, so it passes over them (see PendingClaims); if
// it comes up short because of them, its unserved requests wait for the
// batches in flight and are served by a batch that reads what they wrote.

import type { Database, Transaction, Watch } from '../storage/interfaces.js';
import type { Job } from './interfaces.js';
import { claimKey } from './pending-queue.js';
import type { PendingClaims } from './pending-queue.js';
import { ReadingBatches } from './reading-batches.js';
import type { SettleTurn } from './settle-turn.js';

/**
 * Jobs one transaction takes for coalesced accepts at most (bounds its size
 * and duration). A single `acceptMany` may ask for more, up to
 * {@link MAX_ACCEPT_MANY}: it then has a transaction of its own.
 */
export const MAX_ACCEPT_BATCH = 64;

/** The most jobs one `acceptMany` takes. */
export const MAX_ACCEPT_MANY = 1_000;

/**
 * Accept transactions of one batcher in flight at once: one reading, the
 * others committing. Two keep a commit slot busy with accepts while the
 * previous batch waits for its fsync; more only lengthen the claimed front
 * that every batch has to read past.
 */
export const MAX_ACCEPT_BATCHES_IN_FLIGHT = 2;

export interface AcceptBatch {
  /** Up to `count` jobs, in the order they were taken from the queue. */
  jobs: Job[];
  /** Set when a request that waits for jobs is left without one (see `AcceptBatchBody`). */
  watch: Watch | undefined;
  nextScheduledTime: number | undefined;
  /** Whether queue entries claimed by another batch in flight were passed over. */
  skippedClaims: boolean;
  /** The transaction stopped at its byte budget: more jobs may be due. */
  truncated: boolean;
  /** Bytes of job data in the records it rewrote (counted against its budget). */
  bytes: number;
  /** Held back by the type's rate: when it next allows a start (ms, on the handle's clock); see type-limits.ts. */
  limitedUntil?: number;
}

export interface AcceptOutcome {
  /** Up to the number asked for; empty when none was due. */
  jobs: Job[];
  /** For a request left without a job that asked to wait: fires on the next enqueue. */
  watch: Watch | undefined;
  nextScheduledTime: number | undefined;
  /** Held back by the type's rate: when it next allows a start (ms, on the handle's clock). */
  limitedUntil?: number;
}

interface Request {
  count: number;
  wantWatch: boolean;
  resolve(outcome: AcceptOutcome): void;
  reject(error: unknown): void;
}

/**
 * One batch's transaction body: takes up to `count` jobs, and asks for a
 * watch when it finds fewer than `watchUnder` (0: nobody waits).
 */
export type AcceptBatchBody = (
  tx: Transaction,
  count: number,
  watchUnder: number,
  claims: PendingClaims,
) => Promise<AcceptBatch>;

/**
 * The claims of one batch, in the set shared by the batches in flight (a
 * batcher's accepts, or the write batches that serve parked accepts).
 */
export class BatchClaims implements PendingClaims {
  readonly claimed: Set<number>;
  readonly #mine: number[] = [];

  constructor(claimed: Set<number>) {
    this.claimed = claimed;
  }

  claim(key: Buffer, hash?: number): void {
    const claimed = hash ?? claimKey(key);
    this.claimed.add(claimed);
    this.#mine.push(claimed);
  }

  /** Drops this batch's claims: its attempt is over (committed, failed, or about to be retried). */
  release(): void {
    for (const key of this.#mine) this.claimed.delete(key);
    this.#mine.length = 0;
  }
}

export class AcceptBatcher {
  readonly #body: AcceptBatchBody;
  readonly #onIdle: () => void;
  #waiting: Request[] = [];
  /** Batches whose transaction has not settled. */
  #inFlight = 0;
  /** Batches whose body runs now: their picks are not all claimed yet. */
  readonly #batches: ReadingBatches;
  /** A batch came up short behind claims: the next one waits until no batch is in flight. */
  #held = false;
  /** Queue entries picked by batches in flight (see claimKey). */
  readonly #claimed = new Set<number>();
  /** Set by close(): what requests that have not reached a transaction are rejected with. */
  #closedError: (() => Error) | undefined;

  /** Turns in which the handle answered calls: marked when a batch hands out its jobs. */
  readonly #turn: SettleTurn | undefined;

  constructor(database: Database, body: AcceptBatchBody, onIdle: () => void, turn?: SettleTurn) {
    this.#body = body;
    this.#onIdle = onIdle;
    this.#turn = turn;
    // Once a batch's body has picked, it commits: the next may read meanwhile.
    this.#batches = new ReadingBatches(database, () => this.#pump());
  }

  /** One accept attempt: resolves with up to `count` jobs, or with none (and a watch when `wantWatch`). */
  take(count: number, wantWatch: boolean): Promise<AcceptOutcome> {
    return new Promise((resolve, reject) => {
      if (this.#closedError) {
        reject(this.#closedError());
        return;
      }
      this.#waiting.push({ count, wantWatch, resolve, reject });
      this.#pump();
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

  /** Starts a batch when one may start: nobody is still picking, and the pipeline has room. */
  #pump(): void {
    if (
      this.#waiting.length === 0 ||
      this.#closedError !== undefined ||
      this.#batches.reading > 0 ||
      this.#inFlight >= MAX_ACCEPT_BATCHES_IN_FLIGHT ||
      (this.#held && this.#inFlight > 0)
    ) {
      return;
    }
    void this.#run(this.#waiting.splice(0, requestsFitting(this.#waiting)));
  }

  async #run(batch: Request[]): Promise<void> {
    this.#inFlight += 1;
    const claims = new BatchClaims(this.#claimed);
    const { count, watchUnder } = batchNeeds(batch);
    let result: AcceptBatch | undefined;
    let failed = false;
    let failure: unknown;
    try {
      // Counted as reading from the start: until its body has picked, a batch
      // started next to it could pick the same jobs.
      result = await this.#batches.transact((tx) => {
        claims.release(); // a retried attempt picks again
        return this.#body(tx, count, watchUnder, claims);
      });
    } catch (error) {
      failed = true;
      failure = error;
    }
    claims.release();
    this.#inFlight -= 1;
    this.#turn?.mark();
    if (this.#inFlight === 0) this.#held = false;
    if (failed || result === undefined) {
      for (const request of batch) request.reject(failure);
    } else if ((result.skippedClaims || result.truncated) && result.jobs.length < count) {
      // Short behind the picks of batches in flight (whether those commit or
      // fail decides what is left), or stopped at the byte budget: requests
      // that got nothing try again rather than hear "no job".
      if (result.watch) result.watch.cancel();
      const served = servedRequests(batch, result.jobs.length);
      distribute(batch.slice(0, served), { ...result, watch: undefined });
      const left = batch.slice(served);
      if (this.#closedError) for (const request of left) request.reject(this.#closedError());
      else {
        this.#waiting.unshift(...left);
        this.#held = result.skippedClaims && this.#inFlight > 0;
      }
    } else {
      distribute(batch, result);
    }
    this.#pump();
    if (this.#inFlight === 0 && this.#waiting.length === 0) this.#onIdle();
  }
}

/** How many of the first waiting requests one transaction serves. */
function requestsFitting(waiting: readonly Request[]): number {
  const limit = Math.max(MAX_ACCEPT_BATCH, waiting[0]?.count ?? 0);
  let jobs = 0;
  let requests = 0;
  for (const request of waiting) {
    if (requests > 0 && jobs + request.count > limit) break;
    jobs += request.count;
    requests += 1;
  }
  return requests;
}

/**
 * The jobs a batch asks for, and below how many found jobs a request that
 * wants a watch is left without a job (requests are served in order): with
 * that many or more nobody needs the watch, and the transaction makes none.
 */
function batchNeeds(batch: readonly Request[]): { count: number; watchUnder: number } {
  let count = 0;
  let watchUnder = 0;
  for (const request of batch) {
    // This request gets a job only when more than `count` are found.
    if (request.wantWatch) watchUnder = count + 1;
    count += request.count;
  }
  return { count, watchUnder };
}

/** How many requests, in order, get at least one of `jobs` jobs. */
function servedRequests(batch: readonly Request[], jobs: number): number {
  let served = 0;
  let given = 0;
  while (served < batch.length && given < jobs) {
    given += (batch[served] as Request).count;
    served += 1;
  }
  return served;
}

function distribute(batch: Request[], result: AcceptBatch): void {
  const served = servedRequests(batch, result.jobs.length);
  const waiters = batch.slice(served).filter((request) => request.wantWatch).length;
  const shared = result.watch && waiters > 0 ? shareWatch(result.watch, waiters) : undefined;
  if (result.watch && waiters === 0) result.watch.cancel();
  let next = 0;
  batch.forEach((request, index) => {
    const jobs = result.jobs.slice(next, next + request.count);
    next += jobs.length;
    request.resolve({
      jobs,
      watch: index >= served && request.wantWatch ? shared?.() : undefined,
      nextScheduledTime: result.nextScheduledTime,
      ...(result.limitedUntil === undefined ? {} : { limitedUntil: result.limitedUntil }),
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
