// What the calls of one write attempt share (see write-batcher.ts): the
// reads many of them make of one key, and the writes they need only once.

import type { TransactionFastPaths } from '../storage/fast-paths.js';
import type { Transaction } from '../storage/interfaces.js';
import { finishTime, writeLogRows } from './finish-log.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome } from './job-record.js';
import type { Handover } from './parked-accepts.js';
import type { OncePerAttempt } from './pending-queue.js';

/**
 * Reads that the calls of one attempt share: a key that many calls read and
 * none writes (a type's timeout, which every add checks) is read once. And
 * the writes they need only once (see OncePerAttempt). Keyed by the
 * identity of the key buffer, which the key caches keep stable.
 */
export class SharedReads implements OncePerAttempt {
  readonly #tx: Transaction;
  readonly #values = new Map<Buffer, Promise<Buffer | undefined>>();
  /** What `getNow` read, by key: made on first use (only adds on the embedded engine read this way). */
  #valuesNow: Map<Buffer, Buffer | undefined> | undefined;
  readonly #written = new Set<Buffer>();
  #counts: Map<Buffer, number> | undefined;
  #finishedAt: number | undefined;
  /** The ids finished in this attempt, by their type and outcome's count key (one stable buffer each). */
  #finished: Map<Buffer, { keys: TypeKeys; outcome: JobOutcome; ids: string[] }> | undefined;
  readonly #handover: Handover | undefined;
  /** Per type, the runs of each group this attempt ended less those it started (see OncePerAttempt.endedGroupRun). */
  #groupRuns: Map<TypeKeys, Map<string, number>> | undefined;

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

  /**
   * `get` answered at once through `now`, the transaction's fast reads (see
   * fast-paths.ts): one read per key in the attempt, as with `get`. Throws
   * what the read throws.
   */
  getNow(now: TransactionFastPaths, key: Buffer): Buffer | undefined {
    let values = this.#valuesNow;
    if (values === undefined) {
      values = new Map();
      this.#valuesNow = values;
    } else if (values.has(key)) {
      return values.get(key);
    }
    const value = now.readNow(key, true);
    values.set(key, value);
    return value;
  }

  first(key: Buffer): boolean {
    if (this.#written.has(key)) return false;
    this.#written.add(key);
    return true;
  }

  add(key: Buffer, delta: number): void {
    if (this.#counts === undefined) this.#counts = new Map();
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + delta);
  }

  logFinish(keys: TypeKeys, outcome: JobOutcome, id: string): number {
    this.#finishedAt ??= finishTime();
    this.#finished ??= new Map();
    const key = keys.finishedCount[outcome];
    const log = this.#finished.get(key);
    if (log === undefined) this.#finished.set(key, { keys, outcome, ids: [id] });
    else log.ids.push(id);
    return this.#finishedAt;
  }

  /** Writes the counters' summed changes (see add) and the finish log rows (see logFinish): once every call of the attempt has made its writes. */
  writeOnceWrites(): void {
    if (this.#counts !== undefined) {
      for (const [key, delta] of this.#counts) if (delta !== 0) this.#tx.atomicAdd(key, delta);
      this.#counts = undefined;
    }
    if (this.#finished !== undefined && this.#finishedAt !== undefined) {
      for (const { keys, outcome, ids } of this.#finished.values()) writeLogRows(this.#tx, keys, outcome, this.#finishedAt, ids);
      this.#finished = undefined;
    }
  }

  enqueued(keys: TypeKeys, scheduledTime: number): void {
    this.#handover?.enqueued(keys, scheduledTime);
  }

  freedGroupSlot(keys: TypeKeys): void {
    this.#handover?.freedGroupSlot(keys);
  }

  endedGroupRun(keys: TypeKeys, group: string): void {
    this.#countGroupRuns(keys, group, 1);
  }

  startedGroupRuns(keys: TypeKeys, group: string, count: number): void {
    if (this.#groupRuns?.has(keys)) this.#countGroupRuns(keys, group, -count);
  }

  #countGroupRuns(keys: TypeKeys, group: string, ended: number): void {
    this.#groupRuns ??= new Map();
    let groups = this.#groupRuns.get(keys);
    if (groups === undefined) {
      groups = new Map();
      this.#groupRuns.set(keys, groups);
    }
    groups.set(group, (groups.get(group) ?? 0) + ended);
  }

  /**
   * Bumps the count of ended runs of each type in which this attempt left a
   * group with fewer running jobs than it found: once the parked accepts it
   * served have taken theirs (batch-bodies.ts), as those may refill the slots.
   */
  writeEndedRuns(): void {
    if (this.#groupRuns === undefined) return;
    for (const [keys, groups] of this.#groupRuns) {
      for (const ended of groups.values()) {
        if (ended > 0) {
          this.#tx.atomicAdd(keys.groups.endedRuns, 1);
          break;
        }
      }
    }
    this.#groupRuns = undefined;
  }
}
