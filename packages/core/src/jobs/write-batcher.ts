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

/**
 * A call for the batcher: a body it runs and wraps ({@link BodyRequest}), or
 * one that reports its own outcome ({@link SettlingRequest}).
 */
export type WriteRequest<T> = BodyRequest<T> | SettlingRequest<T>;

/** What the batcher needs of every call, whatever runs it. */
interface WriteRequestBase {
  /**
   * The job the call writes: `id` of type `scope`. Two calls on one job never share a transaction, and
   * the later one waits until the earlier has settled, so calls on one job
   * apply in the order they were made.
   */
  scope: string;
  id: string;
  /** About how many bytes the call writes: transactions are kept well below the storage limit. */
  bytes: number;
}

/** A call whose body the batcher runs, its outcome caught by an async wrapper (a promise and a frame per call). */
export interface BodyRequest<T> extends WriteRequestBase {
  body: WriteBody<T>;
  settleInto?: undefined;
  readFirst?: undefined;
}

/**
 * A call that runs its own body and reports its outcome (of type `_Result`, what
 * `submit` resolves with): what the calls that come in bulk are (see
 * write-calls.ts), which saves the batch a wrapper per call.
 */
export interface SettlingRequest<_Result> extends WriteRequestBase {
  body?: undefined;
  /**
   * Runs the body and reports its outcome to `outcomes` under `userVersion`
   * itself, now or once its reads arrive; never throws, and a promise it
   * returns never rejects. Called as a method, so a request may be a class instance.
   */
  settleInto(tx: Transaction, userVersion: number, reads: SharedReads, outcomes: BodyOutcomes): Promise<void> | void;
  /**
   * Optional: makes the call's reads that the transaction answers at once,
   * before any call of the attempt runs `settleInto` (so before any
   * writes), for `settleInto` to use. Never throws: a failed read is
   * `settleInto`'s outcome.
   */
  readFirst?(tx: Transaction): void;
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

/**
 * Told when a call settles, just after its promise is: how a caller that
 * must know when its writes are done (a local queue's `stop()`) counts
 * them without a `then` per call.
 */
export interface WriteCounter {
  settled(): void;
}

/** What a failed call rejects with: the batcher's error as it is, or as its owner names it (a closed handle's `closed`). */
export type FailureOf = (error: unknown) => unknown;

const asItIs: FailureOf = (error) => error;

/**
 * The resolving functions of the promise being made: `new Promise(capture)`
 * leaves them here for the call's constructor to take, so that no executor
 * closure is made per call.
 */
const nothingCaptured = (): void => {};
let capturedResolve: (value: unknown) => void = nothingCaptured;
let capturedReject: (reason: unknown) => void = nothingCaptured;
function capture(resolve: (value: never) => void, reject: (reason: never) => void): void {
  capturedResolve = resolve as (value: unknown) => void;
  capturedReject = reject as (reason: unknown) => void;
}

/**
 * A call, from its queueing to its outcome: one of `submit` (it settles the
 * promise `submit` returned) or an item of `submitAll` (it fills its slot
 * in that call's outcomes). One object per call: the queue's entry and the
 * caller's waiter in one.
 */
class Call {
  readonly request: WriteRequest<unknown>;
  /** Set after a shared transaction failed: this call now gets one of its own. */
  alone = false;
  /** Cleared after a parked accept failed in this call's transaction: it runs again without serving any. */
  serveParked = true;
  /** `submit`'s promise's resolving functions (else undefined). */
  readonly #resolve: ((value: unknown) => void) | undefined;
  readonly #reject: ((reason: unknown) => void) | undefined;
  readonly #failure: FailureOf;
  readonly #counter: WriteCounter | undefined;
  /** The `submitAll` this call is an item of (else undefined), and its place there. */
  readonly #many: ManyCalls | undefined;
  readonly #index: number;

  /** A call of `submit`, whose promise was made by `new Promise(capture)` just before. */
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: WriteCounter | undefined);
  /** The item `index` of a `submitAll`. */
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: undefined, many: ManyCalls, index: number);
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: WriteCounter | undefined, many?: ManyCalls, index = 0) {
    this.request = request;
    this.#failure = failure;
    this.#counter = counter;
    this.#many = many;
    this.#index = index;
    if (many === undefined) {
      this.#resolve = capturedResolve;
      this.#reject = capturedReject;
      // Not kept past their call: they would hold its promise (and what waits on it) alive.
      capturedResolve = nothingCaptured;
      capturedReject = nothingCaptured;
    }
  }

  settle(outcome: Settled<unknown>): void {
    if (this.#many !== undefined) {
      this.#many.settle(this.#index, outcome);
      return;
    }
    if (outcome.status === 'fulfilled') this.#resolve?.(outcome.value);
    else this.#reject?.(this.#failure(outcome.reason));
    this.#counter?.settled();
  }
}

/** A `submitAll`: its outcomes, and one promise for all of them. */
class ManyCalls {
  readonly #outcomes: Settled<unknown>[];
  readonly #resolve: (outcomes: Settled<unknown>[]) => void;
  #left: number;

  constructor(count: number, resolve: (outcomes: Settled<unknown>[]) => void) {
    this.#outcomes = new Array<Settled<unknown>>(count);
    this.#left = count;
    this.#resolve = resolve;
  }

  settle(index: number, outcome: Settled<unknown>): void {
    this.#outcomes[index] = outcome;
    this.#left -= 1;
    if (this.#left === 0) this.#resolve(this.#outcomes);
  }
}

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
    this.#enqueue(new Call(request, this.#failure, counter));
    this.#pump();
    return promise;
  }

  /** Runs many calls, in as few transactions as the limits allow; each gets its own outcome. */
  submitAll<T>(requests: readonly WriteRequest<T>[]): Promise<Settled<T>[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const many = new ManyCalls(requests.length, resolve as (outcomes: Settled<unknown>[]) => void);
      for (let index = 0; index < requests.length; index++) {
        this.#enqueue(new Call(requests[index] as WriteRequest<unknown>, this.#failure, undefined, many, index));
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

  #enqueue(call: Call): void {
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
  #takeBatch(): Call[] {
    const queue = this.#queue;
    const batch: Call[] = [];
    const left: Call[] = [];
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

  async #run(batch: Call[]): Promise<void> {
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
        (batch[index] as Call).settle(outcomes[index] as Settled<unknown>);
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

function servesParked(batch: readonly Call[]): boolean {
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
class CallQueue {
  #entries: Call[] = [];
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

  at(index: number): Call {
    return this.#entries[index] as Call;
  }

  push(entry: Call): void {
    this.#entries.push(entry);
  }

  /**
   * Drops the calls before `index`, except `kept` (calls among them that
   * stay queued, in order), which go back to the front: there is room for
   * them in the slots just taken.
   */
  consume(index: number, kept: readonly Call[]): void {
    const entries = this.#entries;
    const head = index - kept.length;
    for (let i = 0; i < kept.length; i++) entries[head + i] = kept[i] as Call;
    for (let i = this.#head; i < head; i++) entries[i] = undefined as unknown as Call; // released for the GC
    this.#head = head;
    this.#compact();
  }

  /** Puts calls back at the front, in order. */
  unshift(front: readonly Call[]): void {
    if (front.length <= this.#head) {
      this.#head -= front.length;
      for (let i = 0; i < front.length; i++) this.#entries[this.#head + i] = front[i] as Call;
      return;
    }
    this.#entries = front.concat(this.#entries.slice(this.#head));
    this.#head = 0;
  }

  /** Every call, the queue left empty. */
  takeAll(): Call[] {
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
  /** The last type looked up and its ids: a batch's calls are mostly of one type, so most need no map lookup. */
  #lastScope: string | undefined;
  #lastIds: Set<string> | undefined;

  /** Adds the job; false when it was there already. */
  add(scope: string, id: string): boolean {
    let ids = this.#ids(scope);
    if (ids === undefined) {
      ids = new Set();
      this.#scopes.set(scope, ids);
      this.#lastScope = scope;
      this.#lastIds = ids;
    } else if (ids.has(id)) {
      return false;
    }
    ids.add(id);
    return true;
  }

  delete(scope: string, id: string): void {
    const ids = this.#ids(scope);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) {
      this.#scopes.delete(scope);
      if (this.#lastIds === ids) {
        this.#lastScope = undefined;
        this.#lastIds = undefined;
      }
    }
  }

  #ids(scope: string): Set<string> | undefined {
    if (scope === this.#lastScope) return this.#lastIds;
    const ids = this.#scopes.get(scope);
    if (ids !== undefined) {
      this.#lastScope = scope;
      this.#lastIds = ids;
    }
    return ids;
  }
}

/**
 * Runs every body of a batch in `tx`, concurrently (they touch different
 * jobs). Waits for all of them before it fails: a body still running when
 * the attempt is retried would write into the retry. Then serves the
 * accepts parked on what they enqueued, with the user versions after theirs.
 */
async function runBodies(tx: Transaction, batch: readonly Call[], handover: Handover | undefined): Promise<Settled<unknown>[]> {
  handover?.begin();
  const reads = new SharedReads(tx, handover);
  // One promise for the whole batch, not a `then` and a Promise.all slot per call.
  const bodies = new BodiesRun(batch.length);
  // The reads that can be made at once come first: a read after the
  // transaction's first write looks through its buffered writes too.
  for (let userVersion = 0; userVersion < batch.length; userVersion++) (batch[userVersion] as Call).request.readFirst?.(tx);
  for (let userVersion = 0; userVersion < batch.length; userVersion++) {
    const { request } = batch[userVersion] as Call;
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
async function runBody(request: BodyRequest<unknown>, tx: Transaction, userVersion: number, reads: SharedReads, bodies: BodiesRun): Promise<void> {
  let outcome: Settled<unknown>;
  try {
    outcome = { status: 'fulfilled', value: await request.body(tx, userVersion, reads) };
  } catch (error) {
    outcome = { status: 'rejected', reason: error as Error };
  }
  bodies.settle(userVersion, outcome);
}
