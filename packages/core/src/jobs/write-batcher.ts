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

import { JobsError } from '../errors.js';
import type { Database, Transaction } from '../storage/interfaces.js';
import type { Settled } from './interfaces.js';
import type { TypeKeys } from './job-keys.js';
import { HandoverFailure } from './parked-accepts.js';
import type { Handover, ParkedAccepts } from './parked-accepts.js';
import type { OncePerAttempt } from './pending-queue.js';
import { ReadingBatches } from './reading-batches.js';
import { SettleTurn } from './settle-turn.js';

/**
 * A call's work inside a shared transaction. `userVersion` is unique among
 * the calls of the transaction (an update needs one for its activity row).
 */
export type WriteBody<T> = (tx: Transaction, userVersion: number, reads: SharedReads) => Promise<T>;

/**
 * Reads that the calls of one attempt share: a key that many calls read and
 * none writes (a type's timeout, which every add checks) is read once. And
 * the writes they need only once (see OncePerAttempt). Keyed by the
 * identity of the key buffer, which the key caches keep stable.
 */
export class SharedReads implements OncePerAttempt {
  readonly #tx: Transaction;
  readonly #values = new Map<Buffer, Promise<Buffer | undefined>>();
  readonly #written = new Set<Buffer>();
  readonly #handover: Handover | undefined;

  constructor(tx: Transaction, handover?: Handover) {
    this.#tx = tx;
    this.#handover = handover;
  }

  get(key: Buffer): Promise<Buffer | undefined> {
    let value = this.#values.get(key);
    if (value === undefined) {
      value = this.#tx.get(key);
      this.#values.set(key, value);
    }
    return value;
  }

  first(key: Buffer): boolean {
    if (this.#written.has(key)) return false;
    this.#written.add(key);
    return true;
  }

  enqueued(keys: TypeKeys, scheduledTime: number): void {
    this.#handover?.enqueued(keys, scheduledTime);
  }
}

export interface WriteRequest<T> {
  /**
   * The job the call writes: `id` of type `scope`. Two calls on one job never share a transaction, and
   * the later one waits until the earlier has settled, so calls on one job
   * apply in the order they were made.
   */
  scope: string;
  id: string;
  /** About how many bytes the call writes: transactions are kept well below the storage limit. */
  bytes: number;
  /** Called as a method (`request.body(…)`), so a request may be a class instance (see write-calls.ts). */
  body: WriteBody<T>;
  /**
   * Runs the body and reports its outcome to `outcomes` under `userVersion`
   * itself, now or once its reads arrive; never throws, and a promise it
   * returns never rejects. Optional: a request that has it saves the batch
   * an async wrapper (a promise and a frame) per call.
   */
  settleInto?(tx: Transaction, userVersion: number, reads: SharedReads, outcomes: BodyOutcomes): Promise<void> | void;
}

/** Where the calls of a batch report their outcomes, by user version. */
export interface BodyOutcomes {
  settle(userVersion: number, outcome: Settled<unknown>): void;
}

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

interface Entry {
  request: WriteRequest<unknown>;
  /** Set after a shared transaction failed: this call now gets one of its own. */
  alone: boolean;
  /** Cleared after a parked accept failed in this call's transaction: it runs again without serving any. */
  serveParked: boolean;
  /** Who waits for this call's outcome, and the call's place among its calls. */
  waiter: Waiter;
  index: number;
}

/** The caller of `submit` (one call) or `submitAll` (many): one object per caller, not a closure per call. */
interface Waiter {
  settle(index: number, outcome: Settled<unknown>): void;
}

class OneCall<T> implements Waiter {
  readonly #resolve: (value: T) => void;
  readonly #reject: (reason: unknown) => void;

  constructor(resolve: (value: T) => void, reject: (reason: unknown) => void) {
    this.#resolve = resolve;
    this.#reject = reject;
  }

  settle(_index: number, outcome: Settled<unknown>): void {
    if (outcome.status === 'fulfilled') this.#resolve(outcome.value as T);
    else this.#reject(outcome.reason);
  }
}

class ManyCalls<T> implements Waiter {
  readonly #outcomes: Settled<T>[];
  readonly #resolve: (outcomes: Settled<T>[]) => void;
  #left: number;

  constructor(count: number, resolve: (outcomes: Settled<T>[]) => void) {
    this.#outcomes = new Array<Settled<T>>(count);
    this.#left = count;
    this.#resolve = resolve;
  }

  settle(index: number, outcome: Settled<unknown>): void {
    this.#outcomes[index] = outcome as Settled<T>;
    this.#left -= 1;
    if (this.#left === 0) this.#resolve(this.#outcomes);
  }
}

export class WriteBatcher {
  readonly #queue = new EntryQueue();
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

  constructor(database: Database, turn: SettleTurn = new SettleTurn(), parked?: ParkedAccepts) {
    this.#batches = new ReadingBatches(database, () => this.#schedule());
    this.#turn = turn;
    this.#parked = parked;
  }

  /** Runs one call; resolves or rejects with that call's own result. */
  submit<T>(request: WriteRequest<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#enqueue(request, new OneCall(resolve, reject), 0);
      this.#pump();
    });
  }

  /** Runs many calls, in as few transactions as the limits allow; each gets its own outcome. */
  submitAll<T>(requests: readonly WriteRequest<T>[]): Promise<Settled<T>[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const waiter = new ManyCalls<T>(requests.length, resolve);
      for (let index = 0; index < requests.length; index++) this.#enqueue(requests[index] as WriteRequest<T>, waiter, index);
      this.#pump();
    });
  }

  /**
   * Calls that have not reached a transaction fail with `error()`, and so
   * does every later one. Transactions in flight settle as they end.
   */
  close(error: () => Error): void {
    this.#closedError = error;
    for (const entry of this.#queue.takeAll()) entry.waiter.settle(entry.index, { status: 'rejected', reason: error() });
  }

  #enqueue<T>(request: WriteRequest<T>, waiter: Waiter, index: number): void {
    if (this.#closedError) {
      waiter.settle(index, { status: 'rejected', reason: this.#closedError() });
      return;
    }
    this.#queue.push({
      request,
      alone: false,
      serveParked: true,
      waiter,
      index,
    });
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
  #takeBatch(): Entry[] {
    const queue = this.#queue;
    const batch: Entry[] = [];
    const left: Entry[] = [];
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

  async #run(batch: Entry[]): Promise<void> {
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
    // The accepts it served get their jobs just after the calls' callers resume (see Handover).
    if (outcomes !== undefined) handover?.committed();
    else handover?.failed();
    if (outcomes !== undefined) {
      for (let index = 0; index < batch.length; index++) {
        const entry = batch[index] as Entry;
        entry.waiter.settle(entry.index, outcomes[index] as Settled<unknown>);
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
      for (const entry of batch) entry.waiter.settle(entry.index, { status: 'rejected', reason });
    }
    this.#pump();
  }
}

function servesParked(batch: readonly Entry[]): boolean {
  for (const entry of batch) if (!entry.serveParked) return false;
  return true;
}

/**
 * The calls waiting for a transaction, in order. Taking a batch from the
 * front moves a head index: a burst of addMany calls queues tens of
 * thousands of calls, and copying the rest of the queue after every batch
 * of 1,000 made the taking quadratic (a visible share of the processors'
 * profile).
 */
class EntryQueue {
  #entries: Entry[] = [];
  #head = 0;

  get length(): number {
    return this.#entries.length - this.#head;
  }

  /** Index of the first call. */
  get head(): number {
    return this.#head;
  }

  /** Index after the last call. */
  get end(): number {
    return this.#entries.length;
  }

  at(index: number): Entry {
    return this.#entries[index] as Entry;
  }

  push(entry: Entry): void {
    this.#entries.push(entry);
  }

  /**
   * Drops the calls before `index`, except `kept` (calls among them that
   * stay queued, in order), which go back to the front: there is room for
   * them in the slots just taken.
   */
  consume(index: number, kept: readonly Entry[]): void {
    const entries = this.#entries;
    const head = index - kept.length;
    for (let i = 0; i < kept.length; i++) entries[head + i] = kept[i] as Entry;
    for (let i = this.#head; i < head; i++) entries[i] = undefined as unknown as Entry; // released for the GC
    this.#head = head;
    this.#compact();
  }

  /** Puts calls back at the front, in order. */
  unshift(front: readonly Entry[]): void {
    if (front.length <= this.#head) {
      this.#head -= front.length;
      for (let i = 0; i < front.length; i++) this.#entries[this.#head + i] = front[i] as Entry;
      return;
    }
    this.#entries = front.concat(this.#entries.slice(this.#head));
    this.#head = 0;
  }

  /** Every call, the queue left empty. */
  takeAll(): Entry[] {
    const all = this.#entries.slice(this.#head);
    this.#entries = [];
    this.#head = 0;
    return all;
  }

  /** Once the taken slots are most of the array, they are cut off (amortized: each call moves at most once per halving). */
  #compact(): void {
    if (this.#head === this.#entries.length) {
      this.#entries = [];
      this.#head = 0;
    } else if (this.#head > 1_024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}

/** Job ids by type: no key string is built per call (a type and id joined had to be flattened and hashed anew). */
class JobSet {
  readonly #scopes = new Map<string, Set<string>>();

  /** Adds the job; false when it was there already. */
  add(scope: string, id: string): boolean {
    let ids = this.#scopes.get(scope);
    if (ids === undefined) {
      ids = new Set();
      this.#scopes.set(scope, ids);
    } else if (ids.has(id)) {
      return false;
    }
    ids.add(id);
    return true;
  }

  delete(scope: string, id: string): void {
    const ids = this.#scopes.get(scope);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) this.#scopes.delete(scope);
  }
}

/**
 * Runs every body of a batch in `tx`, concurrently (they touch different
 * jobs). Waits for all of them before it fails: a body still running when
 * the attempt is retried would write into the retry. Then serves the
 * accepts parked on what they enqueued, with the user versions after theirs.
 */
async function runBodies(tx: Transaction, batch: readonly Entry[], handover: Handover | undefined): Promise<Settled<unknown>[]> {
  handover?.begin();
  const reads = new SharedReads(tx, handover);
  // One promise for the whole batch, not a `then` and a Promise.all slot per call.
  const bodies = new BodiesRun(batch.length);
  for (let userVersion = 0; userVersion < batch.length; userVersion++) {
    const { request } = batch[userVersion] as Entry;
    if (request.settleInto !== undefined) void request.settleInto(tx, userVersion, reads, bodies);
    else void runBody(request, tx, userVersion, reads, bodies);
  }
  const outcomes = await bodies.done;
  // The first error that is not a call's own (a storage error) fails the transaction.
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected' && !(outcome.reason instanceof JobsError)) throw outcome.reason;
  }
  if (handover !== undefined) await handover.serve(tx, batch.length, reads);
  return outcomes;
}

/** The outcomes of a batch's bodies, and one promise for when the last has settled. */
class BodiesRun implements BodyOutcomes {
  readonly outcomes: Settled<unknown>[];
  readonly done: Promise<Settled<unknown>[]>;
  #left: number;
  #resolve: ((outcomes: Settled<unknown>[]) => void) | undefined;

  constructor(count: number) {
    this.outcomes = new Array<Settled<unknown>>(count);
    this.#left = count;
    this.done = count === 0 ? Promise.resolve(this.outcomes) : new Promise((resolve) => (this.#resolve = resolve));
  }

  settle(index: number, outcome: Settled<unknown>): void {
    this.outcomes[index] = outcome;
    this.#left -= 1;
    if (this.#left === 0) this.#resolve?.(this.outcomes);
  }
}

/** Runs one call's body and records its outcome; never rejects (a throw is the call's outcome). */
async function runBody(request: WriteRequest<unknown>, tx: Transaction, userVersion: number, reads: SharedReads, bodies: BodiesRun): Promise<void> {
  let outcome: Settled<unknown>;
  try {
    outcome = { status: 'fulfilled', value: await request.body(tx, userVersion, reads) };
  } catch (error) {
    outcome = { status: 'rejected', reason: error as Error };
  }
  bodies.settle(userVersion, outcome);
}
