// A tuple-encoded key prefix whose bytes are computed once (measured:
// packing a tuple costs as much as an lmdb get, so hot paths must not
// re-encode the same prefix on every call).

import { pack, unpack } from 'fdb-tuple';
import type { TupleItem } from 'fdb-tuple';
import { FdbError, FdbErrorCode } from '../errors.js';
import { hasPrefix } from './has-prefix.js';

export type { TupleItem };

export interface KeyRange {
  begin: Buffer;
  end: Buffer;
}

/**
 * All keys that start with one encoded tuple prefix. Children are made with
 * {@link Subspace.subspace}, which encodes only the new elements and appends
 * them to the cached prefix.
 */
export class Subspace {
  /** The encoded prefix every key of this subspace starts with. */
  readonly prefix: Buffer;
  #range: KeyRange | undefined;

  constructor(prefix: Uint8Array = Buffer.alloc(0)) {
    this.prefix = Buffer.from(prefix);
  }

  /** A subspace for the tuple `items` (under no prefix). */
  static of(...items: TupleItem[]): Subspace {
    return new Subspace(pack(items));
  }

  /** The child subspace `prefix + pack(items)`. */
  subspace(...items: TupleItem[]): Subspace {
    return new Subspace(Buffer.concat([this.prefix, pack(items)]));
  }

  /** The key `prefix + pack(items)`. */
  pack(items: TupleItem | TupleItem[]): Buffer {
    return Buffer.concat([this.prefix, pack(items)]);
  }

  /** The prefix followed by raw, already-encoded tuple bytes. */
  append(encoded: Uint8Array): Buffer {
    return Buffer.concat([this.prefix, encoded]);
  }

  /** The tuple elements after the prefix. Throws `key_outside_legal_range` (2004) if `key` is outside the subspace. */
  unpack(key: Uint8Array): TupleItem[] {
    if (!this.contains(key)) throw new FdbError(FdbErrorCode.key_outside_legal_range, 'the key is outside the subspace');
    const buffer = Buffer.isBuffer(key) ? key : Buffer.from(key.buffer, key.byteOffset, key.byteLength);
    return unpack(buffer.subarray(this.prefix.length));
  }

  contains(key: Uint8Array): boolean {
    return hasPrefix(key, this.prefix);
  }

  /**
   * Every tuple key inside the subspace: `[prefix + 0x00, prefix + 0xff)`,
   * the same bounds FoundationDB's tuple layer uses. Cached.
   */
  range(): KeyRange {
    this.#range ??= {
      begin: Buffer.concat([this.prefix, Buffer.of(0x00)]),
      end: Buffer.concat([this.prefix, Buffer.of(0xff)]),
    };
    return this.#range;
  }
}

/**
 * The first key that sorts after every key starting with `key`
 * (FoundationDB's `strinc`): trailing 0xff bytes are dropped and the last
 * remaining byte is incremented.
 */
export function keyAfterPrefix(key: Uint8Array): Buffer {
  let end = key.length;
  while (end > 0 && key[end - 1] === 0xff) end -= 1;
  if (end === 0) {
    throw new FdbError(FdbErrorCode.key_outside_legal_range, 'a key made only of 0xff bytes has no successor prefix');
  }
  const next = Buffer.from(key.subarray(0, end));
  next[end - 1] = (next[end - 1] ?? 0) + 1;
  return next;
}
