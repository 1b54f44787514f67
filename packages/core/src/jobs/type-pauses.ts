// Paused types. A type is paused while its row (paused, type) exists. Every
// take of a job (accept, acceptMany, an accept served inside a write's
// transaction, and so LocalQueue and the app's processors) reads that row in
// its own transaction and takes nothing while it is there: the pause holds in
// every process and on every node that shares the store, and across
// restarts, with no memory of it anywhere else. The read has a read conflict,
// so on FoundationDB a take that raced a pause's commit runs again and sees
// it. Running jobs are left alone (they finish as usual) and adds go on.
// Resuming clears the row and bumps the type's pending counter, the one every
// waiting accept watches, so they wake at once as for a new job.

import type { Transaction } from '../storage/interfaces.js';
import { readsAtOnce } from '../storage/fast-paths.js';
import type { HandleContext } from './handle-context.js';
import type { JobKeys, TypeKeys } from './job-keys.js';

/** A paused type and when it was paused. */
export interface PausedType {
  type: string;
  /** When the type was paused, in ms since the epoch. */
  pausedAt: number;
}

/**
 * Whether the type is paused, as `tx` sees it: a boolean at once when the
 * transaction answers reads at once (the embedded engine), else a promise.
 */
export function isPausedIn(tx: Transaction, keys: TypeKeys): boolean | Promise<boolean> {
  const fast = readsAtOnce(tx, 'get');
  if (fast !== undefined) return fast.readNow(keys.paused, true) !== undefined;
  return tx.get(keys.paused).then(isPresent);
}

function isPresent(value: Buffer | undefined): boolean {
  return value !== undefined;
}

/** Pauses the type in `tx` (idempotent: a paused type keeps its first pause time). */
export async function pauseIn(tx: Transaction, keys: TypeKeys, nowMs: number): Promise<void> {
  if ((await tx.get(keys.paused)) !== undefined) return;
  const value = Buffer.alloc(8);
  value.writeDoubleBE(nowMs, 0);
  tx.set(keys.paused, value);
}

/** Resumes the type in `tx` and wakes its waiting accepts once `tx` commits. */
export async function resumeIn(tx: Transaction, keys: TypeKeys): Promise<void> {
  if ((await tx.get(keys.paused)) === undefined) return;
  tx.clear(keys.paused);
  tx.atomicAdd(keys.watchesPending, 1);
}

/** The pause calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class TypePauseCalls {
  readonly #handle: HandleContext;
  readonly #keys: JobKeys;

  constructor(handle: HandleContext, keys: JobKeys) {
    this.#handle = handle;
    this.#keys = keys;
  }

  async pause(type: string): Promise<void> {
    const keys = this.#handle.typeKeys(type);
    const now = Date.now();
    await this.#handle.run((tx) => pauseIn(tx, keys, now));
  }

  async resume(type: string): Promise<void> {
    const keys = this.#handle.typeKeys(type);
    await this.#handle.run((tx) => resumeIn(tx, keys));
  }

  async isPaused(type: string): Promise<boolean> {
    const keys = this.#handle.typeKeys(type);
    return this.#handle.run((tx) => tx.get(keys.paused).then(isPresent));
  }

  async getPausedTypes(): Promise<PausedType[]> {
    const subspace = this.#keys.paused;
    const rows = await this.#handle.run((tx) => tx.getRange(subspace.range().begin, subspace.range().end));
    return rows.map((row) => ({ type: String(subspace.unpack(row.key)[0]), pausedAt: row.value.readDoubleBE(0) }));
  }
}
