// One attempt of a transaction on FoundationDB, presented as the storage
// contract's `Transaction`: the caller's keys are moved into the directory
// prefix and back, the mutations become FoundationDB's atomic ops, and every
// error the binding raises comes out as an `FdbError` with the same code.

import { FdbError, FdbErrorCode } from '../../errors.js';
import type { Bytes, KeyValue, RangeOptions, ReadTransaction, Transaction, Watch } from '../interfaces.js';
import { type BindingTransaction, MutationType, bindingErrorCode } from './binding.js';
import type { Keyspace } from './keyspace.js';
import type { Attempt } from '../retry-loop.js';
import { checkKey, checkRange, checkRangeEnd, checkRangeLimit, checkRangeOptions, checkValue } from '../limits.js';
import { addMutationOperand, versionstampedKeyOperand, versionstampedValueOperand } from './mutation-operands.js';

/** The binding's errors become ours; anything else (a bug, a TypeError) passes through untouched. */
export function toFdbError(error: unknown): unknown {
  if (error instanceof FdbError) return error;
  const code = bindingErrorCode(error);
  if (code === undefined) return error;
  const message = error instanceof Error ? error.message : undefined;
  return new FdbError(code, message, { cause: error });
}

async function mapErrors<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw toFdbError(error);
  }
}

/** A range's bounds, checked as the caller gave them, then under the directory prefix. */
function packRange(keyspace: Keyspace, start: Bytes, end: Bytes): [Buffer, Buffer] {
  const from = checkKey(start, 'range start');
  const to = checkRangeEnd(end);
  checkRange(from, to);
  return [keyspace.pack(from), keyspace.pack(to)];
}

type AttemptState = 'open' | 'committing' | 'ended';

/** What the read views need from their transaction: a check that it may still be used. */
interface UsableCheck {
  assertUsable(): void;
}

/** Reads through the binding, with or without read conflicts depending on the binding transaction given. */
class FdbReads implements ReadTransaction {
  readonly #tn: BindingTransaction;
  readonly #keyspace: Keyspace;
  readonly #owner: UsableCheck;

  constructor(tn: BindingTransaction, keyspace: Keyspace, owner: UsableCheck) {
    this.#tn = tn;
    this.#keyspace = keyspace;
    this.#owner = owner;
  }

  async get(key: Bytes): Promise<Buffer | undefined> {
    this.#owner.assertUsable();
    return mapErrors(this.#tn.get(this.#keyspace.pack(checkKey(key))));
  }

  async getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]> {
    this.#owner.assertUsable();
    const checked = checkRangeOptions(options);
    const unbounded = checkRangeLimit(checked?.limit);
    // 0 means no limit, as in FoundationDB.
    const limit = unbounded === Number.POSITIVE_INFINITY ? 0 : unbounded;
    const reverse = checked?.reverse === true;
    const [from, to] = packRange(this.#keyspace, start, end);
    const pairs = await mapErrors(this.#tn.getRangeAll(from, to, { limit, reverse }));
    return pairs.map(([key, value]) => ({ key: this.#keyspace.unpack(key), value }));
  }
}

/**
 * One attempt: `FoundationDbDatabase.doTransaction` makes a fresh one per
 * try over the same binding transaction (which FoundationDB's on_error resets),
 * so a transaction object a body kept from a failed attempt cannot write into
 * the next one.
 */
export class FdbTransaction implements Transaction, UsableCheck, Attempt {
  readonly #tn: BindingTransaction;
  readonly #keyspace: Keyspace;
  readonly #reads: FdbReads;
  #snapshotReads: FdbReads | undefined;
  #state: AttemptState = 'open';
  #versionstamp: Promise<Buffer> | undefined;
  #writes = false;

  constructor(tn: BindingTransaction, keyspace: Keyspace) {
    this.#tn = tn;
    this.#keyspace = keyspace;
    // No per-transaction closures here: under tsx (keepNames) every closure
    // created costs an Object.defineProperty, which shows in profiles.
    this.#reads = new FdbReads(tn, keyspace, this);
  }

  /** @internal Throws when this attempt is committing or over. */
  assertUsable(): void {
    this.#checkOpen();
  }

  #checkOpen(): void {
    if (this.#state === 'committing') {
      throw new FdbError(FdbErrorCode.used_during_commit, 'the transaction is being committed');
    }
    if (this.#state === 'ended') {
      throw new FdbError(
        FdbErrorCode.client_invalid_operation,
        'the transaction has ended (committed or failed); use the one doTransaction passes to the body',
      );
    }
  }

  #write(): void {
    this.#checkOpen();
    this.#writes = true;
  }

  get(key: Bytes): Promise<Buffer | undefined> {
    return this.#reads.get(key);
  }

  getRange(start: Bytes, end: Bytes, options?: RangeOptions): Promise<KeyValue[]> {
    return this.#reads.getRange(start, end, options);
  }

  snapshot(): ReadTransaction {
    this.#checkOpen();
    this.#snapshotReads ??= new FdbReads(this.#tn.snapshot(), this.#keyspace, this);
    return this.#snapshotReads;
  }

  set(key: Bytes, value: Bytes): void {
    this.#write();
    this.#tn.set(this.#keyspace.pack(checkKey(key)), checkValue(value));
  }

  clear(key: Bytes): void {
    this.#write();
    this.#tn.clear(this.#keyspace.pack(checkKey(key)));
  }

  clearRange(start: Bytes, end: Bytes): void {
    this.#write();
    const [from, to] = packRange(this.#keyspace, start, end);
    this.#tn.clearRange(from, to);
  }

  addReadConflictKey(key: Bytes): void {
    this.#checkOpen();
    this.#tn.addReadConflictKey(this.#keyspace.pack(checkKey(key)));
  }

  addReadConflictRange(start: Bytes, end: Bytes): void {
    this.#checkOpen();
    const [from, to] = packRange(this.#keyspace, start, end);
    this.#tn.addReadConflictRange(from, to);
  }

  addWriteConflictKey(key: Bytes): void {
    this.#write();
    this.#tn.addWriteConflictKey(this.#keyspace.pack(checkKey(key)));
  }

  atomicAdd(key: Bytes, delta: number | bigint): void {
    this.#write();
    this.#tn.atomicOpNative(MutationType.add, this.#keyspace.pack(checkKey(key)), addMutationOperand(delta));
  }

  setVersionstampedKey(keyTemplate: Bytes, offset: number, value: Bytes): void {
    this.#write();
    const operand = versionstampedKeyOperand(this.#keyspace, checkKey(keyTemplate, 'key template'), offset);
    this.#tn.atomicOpNative(MutationType.setVersionstampedKey, operand, checkValue(value));
  }

  setVersionstampedValue(key: Bytes, valueTemplate: Bytes, offset: number): void {
    this.#write();
    const operand = versionstampedValueOperand(checkValue(valueTemplate, 'value template'), offset);
    this.#tn.atomicOpNative(MutationType.setVersionstampedValue, this.#keyspace.pack(checkKey(key)), operand);
  }

  getVersionstamp(): Promise<Buffer> {
    if (this.#versionstamp === undefined) {
      // FoundationDB only hands out a versionstamp asked for before commit.
      this.#checkOpen();
      this.#versionstamp = this.#requestVersionstamp();
    }
    return this.#versionstamp;
  }

  #requestVersionstamp(): Promise<Buffer> {
    const stamp = mapErrors(this.#tn.getVersionstamp().promise);
    // A failed attempt rejects it; nobody may be listening, and that must not crash the process.
    stamp.catch(() => {});
    return stamp;
  }

  watch(key: Bytes): Watch {
    this.#checkOpen();
    // All errors, so that a watch whose transaction fails to commit rejects
    // with the commit's error (as on the embedded engine) instead of
    // resolving false as the binding does by default.
    const watch = this.#tn.watch(this.#keyspace.pack(checkKey(key)), { throwAllErrors: true });
    let cancelled = false;
    const promise = watch.promise.then(
      (fired) => fired,
      (error: unknown) => {
        if (cancelled || bindingErrorCode(error) === FdbErrorCode.operation_cancelled) return false;
        throw toFdbError(error);
      },
    );
    // Nobody may be listening to a watch of a failed attempt; that must not crash the process.
    promise.catch(() => {});
    return {
      promise,
      cancel: () => {
        cancelled = true;
        watch.cancel();
      },
    };
  }

  /**
   * Commits this attempt. A writing transaction asks for its versionstamp
   * first, so `getVersionstamp()` still answers after `doTransaction` has
   * returned (FoundationDB refuses the question once the commit started).
   */
  async commit(): Promise<void> {
    this.#checkOpen();
    if (this.#writes && this.#versionstamp === undefined) this.#versionstamp = this.#requestVersionstamp();
    this.#state = 'committing';
    try {
      await mapErrors(this.#tn.rawCommit());
    } finally {
      this.#state = 'ended';
    }
  }

  /**
   * Makes this attempt unusable after an error: the binding transaction is
   * about to be reset for the next one, or cancelled.
   */
  abandon(_reason: unknown): void {
    this.#state = 'ended';
  }
}
