// Watches: each one remembers the value its transaction read when it made
// the watch (embedded-transaction.ts) and fires once a durable commit leaves
// a different value under the key. They are armed only when (and if) the
// creating transaction commits, like FoundationDB's.

import type { Watch } from '../interfaces.js';
import { type KeyChange, lastChanges } from './lmdb-store.js';

/** Up to this many watched keys, a durable batch's changes are compared with them one by one (see `onDurableParts`). */
const FEW_WATCHED_KEYS = 8;

export function sameValue(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined ? b === undefined : b !== undefined && a.equals(b);
}

export class KeyWatch implements Watch {
  readonly key: Buffer;
  readonly keyString: string;
  readonly promise: Promise<boolean>;
  /** The value the creating transaction read when it made the watch. */
  seen: Buffer | undefined;
  #resolve!: (fired: boolean) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #registry: WatchRegistry | undefined;

  constructor(key: Buffer, keyString: string) {
    this.key = key;
    this.keyString = keyString;
    this.promise = new Promise<boolean>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A watch from an attempt that failed and was retried is usually dropped
    // unobserved; its rejection must not crash the process as an unhandled one.
    this.promise.catch(() => {});
  }

  get settled(): boolean {
    return this.#settled;
  }

  cancel(): void {
    this.settle(false);
  }

  /** Resolves the promise once; later calls do nothing. */
  settle(fired: boolean): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#registry?.remove(this);
    this.#resolve(fired);
  }

  /** Rejects the promise (the creating transaction did not commit). */
  fail(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  /** @internal */
  attach(registry: WatchRegistry): void {
    this.#registry = registry;
  }
}

/**
 * The last change of `key` in the first `count` of `parts`. Keys of one
 * length are mostly one kind (a type's job records) and differ at their
 * end: comparing the last byte first leaves `equals`, a call into C++,
 * for the few changes that may be the key.
 */
function lastChangeOf(key: Buffer, parts: readonly (readonly KeyChange[])[], count: number): KeyChange | undefined {
  const length = key.length;
  const lastByte = key[length - 1];
  for (let i = count - 1; i >= 0; i--) {
    const part = parts[i] as readonly KeyChange[];
    for (let j = part.length - 1; j >= 0; j--) {
      const change = part[j] as KeyChange;
      const other = change.key;
      if (other.length === length && other[length - 1] === lastByte && other.equals(key)) return change;
    }
  }
  return undefined;
}

export class WatchRegistry {
  readonly #byKey = new Map<string, Set<KeyWatch>>();

  get size(): number {
    return this.#byKey.size;
  }

  /**
   * Arms `watch` after its transaction committed: fires at once when the
   * value readable now (`current`) already differs from what the
   * transaction read (a read-only transaction does not conflict with the
   * commits since its read version).
   */
  arm(watch: KeyWatch, current: Buffer | undefined): void {
    if (watch.settled) return;
    if (!sameValue(watch.seen, current)) {
      watch.settle(true);
      return;
    }
    let set = this.#byKey.get(watch.keyString);
    if (set === undefined) {
      set = new Set();
      this.#byKey.set(watch.keyString, set);
    }
    set.add(watch);
    watch.attach(this);
  }

  remove(watch: KeyWatch): void {
    const set = this.#byKey.get(watch.keyString);
    if (set === undefined) return;
    set.delete(watch);
    if (set.size === 0) this.#byKey.delete(watch.keyString);
  }

  /** Whether no watch is armed (a durable batch then needs no look at its changes). */
  get isEmpty(): boolean {
    return this.#byKey.size === 0;
  }

  /**
   * Fires the watches whose key the first `count` of a durable batch's
   * `parts` changed to a different value; `changes` is the batch's map of
   * last changes when it keeps one. With few keys watched (a scheduler's
   * cancellation watch is armed all the time) comparing each change's key
   * with them costs less than building that map of every key the batch
   * changed, which most batches never need.
   */
  onDurableParts(parts: readonly (readonly KeyChange[])[], count: number, changes: ReadonlyMap<string, KeyChange> | undefined): void {
    if (this.#byKey.size === 0) return;
    if (changes !== undefined || this.#byKey.size > FEW_WATCHED_KEYS) {
      this.onDurable(changes ?? lastChanges(parts, count));
      return;
    }
    // Each watched key's last change, looked for from the batch's end: no
    // list of the watched keys is made (this runs for every durable batch).
    // A copy of the sets when one fires: firing removes watches.
    let changed: [Set<KeyWatch>, KeyChange][] | undefined;
    for (const set of this.#byKey.values()) {
      let key: Buffer | undefined;
      for (const watch of set) {
        key = watch.key;
        break;
      }
      const last = key === undefined ? undefined : lastChangeOf(key, parts, count);
      if (last === undefined) continue;
      changed ??= [];
      changed.push([set, last]);
    }
    if (changed !== undefined) for (const [set, last] of changed) this.#fireChanged(set, last.value);
  }

  /** Fires the watches whose key a durable batch changed to a different value. */
  onDurable(changes: ReadonlyMap<string, KeyChange>): void {
    if (this.#byKey.size === 0) return;
    // Iterate the smaller side: few watches over a big batch, or the reverse.
    if (this.#byKey.size < changes.size) {
      for (const [keyString, set] of [...this.#byKey]) {
        const change = changes.get(keyString);
        if (change !== undefined) this.#fireChanged(set, change.value);
      }
    } else {
      for (const [keyString, change] of changes) {
        const set = this.#byKey.get(keyString);
        if (set !== undefined) this.#fireChanged(set, change.value);
      }
    }
  }

  #fireChanged(set: Set<KeyWatch>, value: Buffer | undefined): void {
    for (const watch of [...set]) if (!sameValue(watch.seen, value)) watch.settle(true);
  }

  /** Resolves every armed watch with `false` (the database is closing). */
  cancelAll(): void {
    for (const set of [...this.#byKey.values()]) for (const watch of [...set]) watch.settle(false);
    this.#byKey.clear();
  }
}
