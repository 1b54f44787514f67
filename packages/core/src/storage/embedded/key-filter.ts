// Hashes of keys, and a one-sided test for "may this write set hold the
// key?", so that the conflict check skips most of its map lookups. A
// transaction a batch or two behind (pipelined workers, on nearly every
// commit) checks each key it read against each transaction map of those
// batches, and nearly every lookup misses: in the 100,000-job batched drain
// an accept checked ~400 keys against ~2 maps of ~500 keys. A filter is
// built from a map's key hashes when a check first needs it (most write sets
// are never checked). A "no" is certain; a "maybe" goes to the map, never a
// wrong answer.
//
// The same hash keys a transaction's point writes (point-map.ts): a number
// computed from the key's bytes costs less than the key's latin1 string and
// a map of strings, and it is what the filters are built from, so building
// one hashes nothing.

/** Maps this small are looked up directly: building a filter would cost more. */
export const FILTER_MIN_KEYS = 16;

/** The end of a hash: every bit depends on every byte, and the result fits V8's small integers (30 bits, no heap number). */
function finish(hash: number): number {
  let h = hash ^ (hash >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) & 0x3fffffff;
}

/** One step of a hash: four bytes in (murmur3's block step, without its final add). */
function step(hash: number, word: number): number {
  const h = Math.imul(hash ^ word, 0xcc9e2d51);
  return (h << 15) | (h >>> 17);
}

/**
 * A hash of a key string (latin1, one char per byte): every char, four at a
 * time, and the length.
 */
export function keyHash(key: string): number {
  const length = key.length;
  let hash = Math.imul(length, 0x9e3779b1);
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    hash = step(hash, key.charCodeAt(i) | (key.charCodeAt(i + 1) << 8) | (key.charCodeAt(i + 2) << 16) | (key.charCodeAt(i + 3) << 24));
  }
  for (; i < length; i++) hash = step(hash, key.charCodeAt(i));
  return finish(hash);
}

/** `keyHash` of the latin1 string of `key`, from its bytes (no string made). */
export function keyHashOfBytes(key: Uint8Array): number {
  const length = key.length;
  let hash = Math.imul(length, 0x9e3779b1);
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    hash = step(hash, (key[i] as number) | ((key[i + 1] as number) << 8) | ((key[i + 2] as number) << 16) | ((key[i + 3] as number) << 24));
  }
  for (; i < length; i++) hash = step(hash, key[i] as number);
  return finish(hash);
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
  /** 30 (the bits of a hash) minus log2 of the bit count. */
  readonly #shift: number;
  readonly #mask: number;

  /** A filter sized for `count` keys, holding `keys` (latin1 strings) and `byteKeys` (the bytes of such strings). */
  constructor(count: number, keys?: Iterable<string>, byteKeys?: readonly Uint8Array[]) {
    let bitsLog2 = 8;
    while (1 << bitsLog2 < count * 32 && bitsLog2 < 24) bitsLog2++;
    this.#words = new Int32Array(1 << (bitsLog2 - 5));
    this.#shift = 30 - bitsLog2;
    this.#mask = (1 << bitsLog2) - 1;
    if (keys !== undefined) for (const key of keys) this.add(keyHash(key));
    if (byteKeys !== undefined) for (const key of byteKeys) this.add(keyHashOfBytes(key));
  }

  /** A filter sized for `count` keys, holding the keys whose `keyHash`es are `hashes`. */
  static ofHashes(count: number, hashes: Iterable<number>): KeyFilter {
    const filter = new KeyFilter(count);
    for (const hash of hashes) filter.add(hash);
    return filter;
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
