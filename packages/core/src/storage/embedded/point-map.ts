// A transaction's point writes by key, keyed by a hash of the key's bytes
// (`keyHashOfBytes`) rather than by the key's latin1 string: a set or clear
// makes no string, and hashes nothing again in a map of strings, on a path
// every written key takes. The conflict log builds its filters straight
// from these hashes (key-filter.ts).
//
// Two keys may share a hash: the first keeps the hash's slot, and any other
// goes to a map by latin1 string (rare; only ever looked in when a lookup
// finds the slot taken by a different key). So whenever a key sits there,
// the slot of its hash is taken: a lookup that finds the slot empty is done.

import { keyHashOfBytes } from './key-filter.js';

/** What a point map holds: anything with its key. */
export interface Keyed {
  readonly key: Buffer;
}

/** Whether `key`'s bytes are the chars of `keyString` (a latin1 string: one char per byte). */
function isLatin1Of(key: Buffer, keyString: string): boolean {
  const length = key.length;
  if (length !== keyString.length) return false;
  for (let i = 0; i < length; i++) if (key[i] !== keyString.charCodeAt(i)) return false;
  return true;
}

export class PointMap<V extends Keyed> {
  /** One entry per hash: the first key written with it. */
  readonly #byHash = new Map<number, V>();
  /** Entries whose hash's slot holds a different key, by latin1 string; created on the first such key. */
  #collided: Map<string, V> | undefined;

  get size(): number {
    return this.#byHash.size + (this.#collided?.size ?? 0);
  }

  /** The entry of `key` (`hash`: its `keyHashOfBytes`). */
  get(key: Buffer, hash: number = keyHashOfBytes(key)): V | undefined {
    const slot = this.#byHash.get(hash);
    if (slot === undefined) return undefined;
    if (slot.key.equals(key)) return slot;
    return this.#collided?.get(key.toString('latin1'));
  }

  /** Whether it holds the key whose latin1 string is `keyString` (`hash`: its `keyHash`). */
  holds(keyString: string, hash: number): boolean {
    const slot = this.#byHash.get(hash);
    if (slot === undefined) return false;
    if (isLatin1Of(slot.key, keyString)) return true;
    return this.#collided?.has(keyString) === true;
  }

  /** Sets the entry of `value.key` (`hash`: its `keyHashOfBytes`), in place of any earlier one. */
  set(value: V, hash: number = keyHashOfBytes(value.key)): void {
    const slot = this.#byHash.get(hash);
    if (slot === undefined || slot.key.equals(value.key)) this.#byHash.set(hash, value);
    else {
      this.#collided ??= new Map();
      this.#collided.set(value.key.toString('latin1'), value);
    }
  }

  /** Removes the entries `drop` says to, then gives each collided entry whose hash's slot is now free that slot. */
  deleteWhere(drop: (value: V) => boolean): void {
    const byHash = this.#byHash;
    for (const [hash, value] of byHash) if (drop(value)) byHash.delete(hash);
    const collided = this.#collided;
    if (collided === undefined) return;
    for (const [keyString, value] of collided) {
      if (drop(value)) {
        collided.delete(keyString);
        continue;
      }
      const hash = keyHashOfBytes(value.key);
      if (!byHash.has(hash)) {
        byHash.set(hash, value);
        collided.delete(keyString);
      }
    }
  }

  /** The entries: those in their hash's slot in the order their keys were first written, then the collided ones. */
  values(): Iterable<V> {
    const collided = this.#collided;
    if (collided === undefined || collided.size === 0) return this.#byHash.values();
    return [...this.#byHash.values(), ...collided.values()];
  }

  /** The hashes of the keys (a collided key's is among them: it is its slot's). */
  hashes(): Iterable<number> {
    return this.#byHash.keys();
  }
}
