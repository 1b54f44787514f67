// The embedded engine's on-disk layout over lmdb (one lmdb environment, two
// named databases):
// - `data`: user keys as raw bytes (lmdb compares keys with memcmp, which is
//   FoundationDB's order). lmdb-js caps keys at 1978 bytes while FoundationDB
//   allows 10,000, so a key longer than LONG_KEY_PREFIX bytes lives in a
//   *bucket* stored under its first LONG_KEY_PREFIX bytes + 0xff: that bucket
//   key sorts after every key of <= LONG_KEY_PREFIX bytes that is smaller than
//   the long keys it holds and before every one that is larger, so a plain
//   lmdb range scan visits buckets exactly where their keys belong. No short
//   key can have that length, which is how a scan tells buckets apart.
// - `meta`: the last commit version (written in the same lmdb transaction as
//   the data, so a reopened store never reuses a version) and the value of
//   the empty key, which lmdb cannot store as a key.
// Reads of this layout are store-snapshot.ts, writes lmdb-store.ts.

import type { KeyValue } from '../interfaces.js';

/** Keys longer than this are stored in buckets (see above). */
export const LONG_KEY_PREFIX = 1900;
/** The length of a bucket's key, which no stored key has. */
export const BUCKET_KEY_BYTES = LONG_KEY_PREFIX + 1;
/** The meta table's key of the empty key's value. */
export const META_EMPTY_KEY = Buffer.from('empty-key');

/** The key of the bucket that holds `key`, a key longer than LONG_KEY_PREFIX. */
export function bucketKeyOf(key: Buffer): Buffer {
  const bucket = Buffer.allocUnsafe(BUCKET_KEY_BYTES);
  key.copy(bucket, 0, 0, LONG_KEY_PREFIX);
  bucket[LONG_KEY_PREFIX] = 0xff;
  return bucket;
}

/** A bucket's entries, in key order; each key and value a view into `bytes`. */
export function decodeBucket(bytes: Buffer): KeyValue[] {
  const entries: KeyValue[] = [];
  let at = 0;
  while (at < bytes.length) {
    const keyLength = bytes.readUInt32BE(at);
    const key = bytes.subarray(at + 4, at + 4 + keyLength);
    at += 4 + keyLength;
    const valueLength = bytes.readUInt32BE(at);
    const value = bytes.subarray(at + 4, at + 4 + valueLength);
    at += 4 + valueLength;
    entries.push({ key, value });
  }
  return entries;
}

/** A bucket holding `entries` (given in key order): each key and value with its length. */
export function encodeBucket(entries: KeyValue[]): Buffer {
  let size = 0;
  for (const entry of entries) size += 8 + entry.key.length + entry.value.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const entry of entries) {
    at = out.writeUInt32BE(entry.key.length, at);
    at += entry.key.copy(out, at);
    at = out.writeUInt32BE(entry.value.length, at);
    at += entry.value.copy(out, at);
  }
  return out;
}
