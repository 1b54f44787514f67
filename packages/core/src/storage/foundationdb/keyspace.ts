// Maps the caller's keys into the directory-layer prefix jobtree owns in a
// FoundationDB cluster, and back. Callers of the adapter never see the
// prefix: every key they pass is prefixed here, every key FoundationDB returns
// is stripped here. Pure functions over bytes, so they are unit-tested without
// the native client.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { MAX_KEY_BYTES } from '../limits.js';

/**
 * The key space of one directory: every caller key `k` lives at
 * `prefix + k` in the cluster. Directory prefixes are prefix-free (the
 * directory layer guarantees no prefix starts another), so the image of the
 * caller's whole key space, `[prefix, prefix + 0xff...)`, never touches another
 * directory's keys.
 */
export class Keyspace {
  readonly prefix: Buffer;
  /**
   * FoundationDB's 10,000-byte key limit applies to the whole cluster key, so
   * the caller gets that limit minus the prefix (a directory prefix is
   * usually 2 or 3 bytes).
   */
  readonly maxKeyBytes: number;

  constructor(prefix: Uint8Array) {
    // A private copy: the caller may reuse or mutate its buffer.
    this.prefix = Buffer.from(prefix);
    this.maxKeyBytes = MAX_KEY_BYTES - this.prefix.length;
  }

  /** The cluster key of the caller's `key`; fails with key_too_large past `maxKeyBytes`. */
  pack(key: Uint8Array): Buffer {
    if (key.length > this.maxKeyBytes) {
      throw new FdbError(
        FdbErrorCode.key_too_large,
        `key is ${key.length} bytes; on FoundationDB the limit is ${this.maxKeyBytes} (${MAX_KEY_BYTES} minus the ${this.prefix.length}-byte directory prefix)`,
      );
    }
    const packed = Buffer.allocUnsafe(this.prefix.length + key.length);
    this.prefix.copy(packed, 0);
    packed.set(key, this.prefix.length);
    return packed;
  }

  /**
   * The caller's key of a cluster key read back from this key space. A key
   * outside it means a range was mapped wrongly: that is a bug, never data to
   * hand out, so it throws instead of returning a mangled key.
   */
  unpack(clusterKey: Buffer): Buffer {
    if (!this.contains(clusterKey)) {
      throw new FdbError(
        FdbErrorCode.internal_error,
        `key ${clusterKey.toString('hex')} is outside the directory prefix ${this.prefix.toString('hex')}`,
      );
    }
    // A view, not a copy: the binding hands us a fresh buffer per key already.
    return clusterKey.subarray(this.prefix.length);
  }

  contains(clusterKey: Uint8Array): boolean {
    if (clusterKey.length < this.prefix.length) return false;
    for (let i = 0; i < this.prefix.length; i++) {
      if (clusterKey[i] !== this.prefix[i]) return false;
    }
    return true;
  }
}
