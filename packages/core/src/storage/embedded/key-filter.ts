// A one-sided test for "may this write set hold the key?", so that the
// conflict check skips most of its map lookups. A transaction a batch or two
// behind (pipelined workers, on nearly every commit) checks each key it read
// against each transaction map of those batches, and nearly every lookup
// misses: in the 100,000-job batched drain an accept checked ~375 keys
// against ~3.4 maps, 5% of the main thread, most of it hashing and probing
// V8's maps. A filter is built from a map's keys when a check first needs
// it (most write sets are never checked), from a cheap hash of the key
// strings' last characters, where keys of one subspace differ (ids,
// versionstamps). A "no" is certain; a "maybe" goes to the map, so keys
// that differ only early on cost a map lookup, as before, never a wrong
// answer.

/** Maps this small are looked up directly: building a filter would cost more. */
export const FILTER_MIN_KEYS = 16;
/** Characters hashed from the end of a key string. */
const HASHED_TAIL = 12;

/** A hash of a key string (latin1, one char per byte): its length and last characters. */
export function keyHash(key: string): number {
  const length = key.length;
  let hash = Math.imul(length, 0x9e3779b1);
  for (let i = length > HASHED_TAIL ? length - HASHED_TAIL : 0; i < length; i++) {
    hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  }
  return hash ^ (hash >>> 15);
}

/** `keyHash` of the latin1 string of `key`, from its bytes (no string made). */
export function keyHashOfBytes(key: Uint8Array): number {
  const length = key.length;
  let hash = Math.imul(length, 0x9e3779b1);
  for (let i = length > HASHED_TAIL ? length - HASHED_TAIL : 0; i < length; i++) {
    hash = Math.imul(hash ^ (key[i] as number), 0x01000193);
  }
  return hash ^ (hash >>> 15);
}

/** The hashes of `keys`, in order. */
export function keyHashes(keys: readonly string[]): Int32Array {
  const hashes = new Int32Array(keys.length);
  for (let i = 0; i < keys.length; i++) hashes[i] = keyHash(keys[i] as string);
  return hashes;
}

/**
 * A Bloom filter of key hashes: four probes, at least 32 bits per key, so
 * about one "maybe" in 5,000 for a key it does not hold (a "maybe" costs a
 * map lookup, or building the set of a batch's extra keys). The probes are
 * `first + i * step` over the top bits of two mixes of the hash.
 */
export class KeyFilter {
  readonly #words: Int32Array;
  /** 32 minus log2 of the bit count. */
  readonly #shift: number;
  readonly #mask: number;

  /** A filter sized for `count` keys, holding `keys` (latin1 strings) and `byteKeys` (the bytes of such strings). */
  constructor(count: number, keys?: Iterable<string>, byteKeys?: readonly Uint8Array[]) {
    let bitsLog2 = 8;
    while (1 << bitsLog2 < count * 32 && bitsLog2 < 24) bitsLog2++;
    this.#words = new Int32Array(1 << (bitsLog2 - 5));
    this.#shift = 32 - bitsLog2;
    this.#mask = (1 << bitsLog2) - 1;
    if (keys !== undefined) for (const key of keys) this.add(keyHash(key));
    if (byteKeys !== undefined) for (const key of byteKeys) this.add(keyHashOfBytes(key));
  }

  add(hash: number): void {
    const words = this.#words;
    const mask = this.#mask;
    let bit = hash >>> this.#shift;
    const step = (Math.imul(hash, 0x2c1b3c6d) >>> this.#shift) | 1;
    for (let probe = 0; probe < 4; probe++) {
      words[bit >>> 5] = (words[bit >>> 5] as number) | (1 << (bit & 31));
      bit = (bit + step) & mask;
    }
  }

  /** False only when no added key has this hash. */
  mayHave(hash: number): boolean {
    const words = this.#words;
    const mask = this.#mask;
    let bit = hash >>> this.#shift;
    const step = (Math.imul(hash, 0x2c1b3c6d) >>> this.#shift) | 1;
    for (let probe = 0; probe < 4; probe++) {
      if (((words[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
      bit = (bit + step) & mask;
    }
    return true;
  }
}
