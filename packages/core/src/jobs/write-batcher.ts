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

import { JobsError } from '../errors.js';
import type { Database, Transaction } from '../storage/interfaces.js';
import type { Settled } from './interfaces.js';
import { ReadingBatches } from './reading-batches.js';

/**
 * A call's work inside a shared transaction. `userVersion` is unique among
 * the calls of the transaction (an update needs one for its activity row).
 */
export type WriteBody<T> = (tx: Transaction, userVersion: number, reads: SharedReads) => Promise<T>;

/**
 * Reads that the calls of one attempt share: a key that many calls read and
 * none writes (a type's timeout, which every add checks) is read once.
 * Keyed by the identity of the key buffer, which the key caches keep stable.
 */
export class SharedReads {
  readonly #tx: Transaction;
  readonly #values = new Map<Buffer, Promise<Buffer | undefined>>();

  constructor(tx: Transaction) {
    this.#tx = tx;
  }

  get(key: Buffer): Promise<Buffer | undefined> {
    let value = this.#values.get(key);
    if (value === undefined) {
      value = this.#tx.get(key);
      this.#values.set(key, value);
    }
    return value;
  }
}

export interface WriteRequest<T> {
  /**
   * The job the call writes (type and id). Two calls on one job never share
   * a transaction, and the later one waits until the earlier has settled,
   * so calls on one job apply in the order they were made.
   */
  key: string;
  /** About how many bytes the call writes: transactions are kept well below the storage limit. */
  bytes: number;
  body: WriteBody<T>;
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
  key: string;
  bytes: number;
  body: WriteBody<unknown>;
  /** Set after a shared transaction failed: this call now gets one of its own. */
  alone: boolean;
  settle(outcome: Settled<unknown>): void;
}

export class WriteBatcher {
  #queue: Entry[] = [];
  #inFlight = 0;
  /** Transactions whose bodies run now: the next waits for them, to gather more calls. */
  readonly #batches: ReadingBatches;
  /** A start of batches is scheduled for the next turn. */
  #scheduled = false;
  /** Keys of the calls in transactions that have not settled. */
  readonly #busy = new Set<string>();
  #closedError: (() => Error) | undefined;

  constructor(database: Database) {
    this.#batches = new ReadingBatches(database, () => this.#pump());
  }

  /** Runs one call; resolves or rejects with that call's own result. */
  submit<T>(request: WriteRequest<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#enqueue(request, (outcome) => {
        if (outcome.status === 'fulfilled') resolve(outcome.value as T);
        else reject(outcome.reason);
      });
      this.#pump();
    });
  }

  /** Runs many calls, in as few transactions as the limits allow; each gets its own outcome. */
  submitAll<T>(requests: readonly WriteRequest<T>[]): Promise<Settled<T>[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const outcomes = new Array<Settled<T>>(requests.length);
      let left = requests.length;
      requests.forEach((request, index) => {
        this.#enqueue(request, (outcome) => {
          outcomes[index] = outcome as Settled<T>;
          left -= 1;
          if (left === 0) resolve(outcomes);
        });
      });
      this.#pump();
    });
  }

  /**
   * Calls that have not reached a transaction fail with `error()`, and so
   * does every later one. Transactions in flight settle as they end.
   */
  close(error: () => Error): void {
    this.#closedError = error;
    for (const entry of this.#queue.splice(0)) entry.settle({ status: 'rejected', reason: error() });
  }

  #enqueue<T>(request: WriteRequest<T>, settle: (outcome: Settled<unknown>) => void): void {
    if (this.#closedError) {
      settle({ status: 'rejected', reason: this.#closedError() });
      return;
    }
    this.#queue.push({ key: request.key, bytes: request.bytes, body: request.body, alone: false, settle });
  }

  /**
   * Starts the next batch on the next turn of the event loop rather than at
   * once: callers whose previous calls settled together (one flush resolves
   * many commits) call again in the same turn, and so share a transaction,
   * which then shares one flush. The wait is one `setImmediate`.
   */
  #pump(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#startBatches);
  }

  readonly #startBatches = (): void => {
    this.#scheduled = false;
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
  };

  /** The next calls, in order, that may share a transaction. */
  #takeBatch(): Entry[] {
    const batch: Entry[] = [];
    const keys = new Set<string>();
    const left: Entry[] = [];
    let bytes = 0;
    let index = 0;
    for (; index < this.#queue.length; index++) {
      const entry = this.#queue[index] as Entry;
      if (batch.length > 0 && (entry.alone || batch.length >= MAX_WRITE_BATCH || bytes + entry.bytes > MAX_WRITE_BATCH_BYTES)) {
        break;
      }
      if (this.#busy.has(entry.key) || keys.has(entry.key)) {
        left.push(entry);
        continue;
      }
      batch.push(entry);
      keys.add(entry.key);
      bytes += entry.bytes;
      if (entry.alone) {
        index += 1;
        break;
      }
    }
    this.#queue = index === this.#queue.length ? left : left.concat(this.#queue.slice(index));
    return batch;
  }

  async #run(batch: Entry[]): Promise<void> {
    this.#inFlight += 1;
    for (const entry of batch) this.#busy.add(entry.key);
    let outcomes: Settled<unknown>[] | undefined;
    let failure: unknown;
    try {
      // Counted as reading from the start, until the first attempt's bodies
      // are done: a batch started next to it would only take calls from it.
      outcomes = await this.#batches.transact((tx) => runBodies(tx, batch));
    } catch (error) {
      failure = error;
    }
    this.#inFlight -= 1;
    for (const entry of batch) this.#busy.delete(entry.key);
    if (outcomes !== undefined) {
      batch.forEach((entry, index) => {
        entry.settle(outcomes[index] as Settled<unknown>);
      });
    } else if (batch.length > 1 && this.#closedError === undefined) {
      // Which call made the transaction fail is unknown: each runs alone now.
      for (const entry of batch) entry.alone = true;
      this.#queue.unshift(...batch);
    } else {
      const reason = this.#closedError?.() ?? (failure as Error);
      for (const entry of batch) entry.settle({ status: 'rejected', reason });
    }
    this.#pump();
  }
}

/**
 * Runs every body of a batch in `tx`, concurrently (they touch different
 * jobs). Waits for all of them before it fails: a body still running when
 * the attempt is retried would write into the retry.
 */
async function runBodies(tx: Transaction, batch: readonly Entry[]): Promise<Settled<unknown>[]> {
  let storageError: { error: unknown } | undefined;
  const reads = new SharedReads(tx);
  const outcomes = await Promise.all(
    batch.map((entry, userVersion) =>
      entry.body(tx, userVersion, reads).then(
        (value): Settled<unknown> => ({ status: 'fulfilled', value }),
        (error: unknown): Settled<unknown> => {
          if (error instanceof JobsError) return { status: 'rejected', reason: error };
          storageError ??= { error };
          return { status: 'rejected', reason: error as Error };
        },
      ),
    ),
  );
  if (storageError !== undefined) throw storageError.error;
  return outcomes;
}
