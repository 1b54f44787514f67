// Coalesces the writes of this process (adds, updates, finishes, and the
// items of addMany/updateMany/finishMany) into shared transactions. A
// durable commit is most of a write's time, so many calls that arrive
// together share one commit instead of queueing for one each. A lone call
// still gets a transaction of its own at once.
//
// Each call keeps its own answer: its body runs in the shared transaction,
// and a JobsError from it (halt, not_found, no_type_timeout) settles that
// call alone, since a body that throws one has written nothing (see
// job-operations.ts). Any other error fails the transaction; its calls are
// then run again one transaction each, so one bad call cannot fail others.
//
// A transaction that enqueues a job of a type on which an accept of this
// handle is parked serves that accept before it commits (parked-accepts.ts):
// the job starts with the write's commit, not one commit later.

import type { Database } from '../storage/interfaces.js';
import { runBodies } from './batch-bodies.js';
import { CallQueue } from './call-queue.js';
import type { Settled } from './interfaces.js';
import { JobSet } from './job-set.js';
import { HandoverFailure } from './parked-accepts.js';
import type { ParkedAccepts } from './parked-accepts.js';
import { capture, type FailureOf, ManyCalls, QueuedCall } from './queued-call.js';
import { ReadingBatches } from './reading-batches.js';
import { SettleTurn } from './settle-turn.js';
import type { WriteCounter, WriteRequest } from './write-requests.js';

/** Calls per transaction at most (each needs its own 2-byte user version, and bounds the 5 s life). */
export const MAX_WRITE_BATCH = 1_000;
/** Bytes per transaction at most, well below the 10,000,000-byte limit. */
export const MAX_WRITE_BATCH_BYTES = 2_000_000;
/**
 * Write transactions in flight at most. A new one starts only once the
 * previous has run its bodies (it is committing), so calls that arrive
 * meanwhile gather into it; the storage engine's group commit then shares
 * one flush among the transactions committing together.
 */
export const MAX_WRITES_IN_FLIGHT = 8;

const asItIs: FailureOf = (error) => error;

export class WriteBatcher {
  readonly #queue = new CallQueue();
  #inFlight = 0;
  /** Transactions whose bodies run now: the next waits for them, to gather more calls. */
  readonly #batches: ReadingBatches;
  /** A start of batches is scheduled for the next turn (and calls wait for it). */
  #scheduled = false;
  /** The jobs of the calls in transactions that have not settled (or are being gathered). */
  readonly #busy = new JobSet();
  #closedError: (() => Error) | undefined;

  /** Turns in which this handle answered calls (shared with its accept batchers). */
  readonly #turn: SettleTurn;
  /** The handle's parked accepts, which its transactions serve; none without. */
  readonly #parked: ParkedAccepts | undefined;
  /** What `submit`'s calls reject with, given the error that failed them. */
  readonly #failure: FailureOf;

  /**
   * `failure` names the error a call of `submit` rejects with (a handle
   * closed meanwhile turns a storage error into its own `closed`), applied
   * where the call settles: no `catch` per call to rename it.
   */
  constructor(database: Database, turn: SettleTurn = new SettleTurn(), parked?: ParkedAccepts, failure: FailureOf = asItIs) {
    this.#batches = new ReadingBatches(database, () => this.#schedule());
    this.#turn = turn;
    this.#parked = parked;
    this.#failure = failure;
  }

  /**
   * Runs one call; resolves or rejects with that call's own result.
   * `counter`, when given, is told once the call has settled.
   */
  submit<T>(request: WriteRequest<T>, counter?: WriteCounter): Promise<T> {
    const promise = new Promise<T>(capture);
    this.#enqueue(new QueuedCall(request, this.#failure, counter));
    this.#pump();
    return promise;
  }

  /** Runs many calls, in as few transactions as the limits allow; each gets its own outcome. */
  submitAll<T>(requests: readonly WriteRequest<T>[]): Promise<Settled<T>[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const many = new ManyCalls(requests.length, resolve as (outcomes: Settled<unknown>[]) => void);
      for (let index = 0; index < requests.length; index++) {
        this.#enqueue(new QueuedCall(requests[index] as WriteRequest<unknown>, this.#failure, undefined, many, index));
      }
      this.#pump();
    });
  }

  /**
   * Calls that have not reached a transaction fail with `error()`, and so
   * does every later one. Transactions in flight settle as they end.
   */
  close(error: () => Error): void {
    this.#closedError = error;
    for (const call of this.#queue.takeAll()) call.settle({ status: 'rejected', reason: error() });
  }

  #enqueue(call: QueuedCall): void {
    if (this.#closedError) {
      call.settle({ status: 'rejected', reason: this.#closedError() });
      return;
    }
    this.#queue.push(call);
  }

  /**
   * A call that finds the batcher idle (no transaction in flight, and no
   * call of this handle answered in this turn of the event loop) starts its
   * transaction at once: a lone call waits for nothing. Otherwise the next
   * batch starts on the next turn, so that calls arriving meanwhile share
   * it: callers whose calls were answered together (one flush resolves many
   * commits; one accept brings many workers their jobs) call again in the
   * same turn, and calls made while a transaction runs gather for the
   * next one. The wait is one `setImmediate`, queued (by the running
   * batch's end of reads) before that batch commits, so the batch it starts
   * still commits in the same storage write: the engine writes what commits
   * in one turn together.
   */
  #pump(): void {
    if (this.#scheduled) return;
    if (this.#inFlight === 0 && this.#batches.reading === 0 && !this.#turn.marked) this.#startBatches();
    else this.#schedule();
  }

  /** Starts the next batches on the next turn. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#startScheduled);
  }

  readonly #startScheduled = (): void => {
    this.#scheduled = false;
    this.#startBatches();
  };

  #startBatches(): void {
    while (
      this.#batches.reading === 0 &&
      this.#inFlight < MAX_WRITES_IN_FLIGHT &&
      this.#queue.length > 0 &&
      this.#closedError === undefined
    ) {
      const batch = this.#takeBatch();
      if (batch.length === 0) return; // every queued call waits for a call on its job
      void this.#run(batch);
    }
  }

  /** The next calls, in order, that may share a transaction; their jobs are busy from now on. */
  #takeBatch(): QueuedCall[] {
    const queue = this.#queue;
    const batch: QueuedCall[] = [];
    const left: QueuedCall[] = [];
    let bytes = 0;
    let index = queue.head;
    for (; index < queue.end; index++) {
      const entry = queue.at(index);
      const { request } = entry;
      if (batch.length > 0 && (entry.alone || batch.length >= MAX_WRITE_BATCH || bytes + request.bytes > MAX_WRITE_BATCH_BYTES)) {
        break;
      }
      // Marked busy at once: a second call on the same job waits for this batch.
      if (!this.#busy.add(request.scope, request.id)) {
        left.push(entry);
        continue;
      }
      batch.push(entry);
      bytes += request.bytes;
      if (entry.alone) {
        index += 1;
        break;
      }
    }
    queue.consume(index, left);
    return batch;
  }

  async #run(batch: QueuedCall[]): Promise<void> {
    this.#inFlight += 1;
    const handover = servesParked(batch) ? this.#parked?.handover() : undefined;
    let outcomes: Settled<unknown>[] | undefined;
    let failure: unknown;
    try {
      // Counted as reading from the start, until the first attempt's bodies
      // are done: a batch started next to it would only take calls from it.
      outcomes = await this.#batches.transact((tx) => runBodies(tx, batch, handover));
    } catch (error) {
      failure = error;
    }
    this.#inFlight -= 1;
    this.#turn.mark();
    for (const entry of batch) this.#busy.delete(entry.request.scope, entry.request.id);
    // The accepts it served get their jobs just after the calls' callers resume, unless the store told them earlier that the commit was readable (see Handover).
    if (outcomes !== undefined) handover?.committed();
    else handover?.failed();
    if (outcomes !== undefined) {
      for (let index = 0; index < batch.length; index++) {
        (batch[index] as QueuedCall).settle(outcomes[index] as Settled<unknown>);
      }
    } else if (failure instanceof HandoverFailure && this.#closedError === undefined) {
      // An accept's body failed, not the calls: they run again, serving none.
      for (const entry of batch) entry.serveParked = false;
      this.#queue.unshift(batch);
    } else if (batch.length > 1 && this.#closedError === undefined) {
      // Which call made the transaction fail is unknown: each runs alone now.
      for (const entry of batch) entry.alone = true;
      this.#queue.unshift(batch);
    } else {
      const reason = this.#closedError?.() ?? (failure as Error);
      for (const entry of batch) entry.settle({ status: 'rejected', reason });
    }
    this.#pump();
  }
}

function servesParked(batch: readonly QueuedCall[]): boolean {
  for (const entry of batch) if (!entry.serveParked) return false;
  return true;
}
