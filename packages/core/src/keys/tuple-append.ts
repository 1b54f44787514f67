// Hand-written tuple encoding of the elements that hot paths append to a
// cached prefix: a string (job ids) and a double (scheduled times). Packing
// through fdb-tuple builds a growable buffer and a result object for every
// key, which profiling showed as a real share of a jobs transaction
// (a pack costs about as much as an lmdb get); these write the same bytes into one exact allocation.
// test/jobs/keys.test.ts checks them byte for byte against fdb-tuple.

import { pack } from 'fdb-tuple';

/** Tuple typecodes (FoundationDB's tuple layer spec). */
export const TUPLE_STRING_CODE = 0x02;
const DOUBLE_CODE = 0x21;
/** Bytes of an encoded double element: typecode + 8. */
export const TUPLE_DOUBLE_BYTES = 9;

/**
 * `prefix + pack(value)` for a string: typecode 0x02, the UTF-8 bytes (a NUL
 * byte escaped as 00 ff), then 00. `value` must be valid Unicode (no lone
 * surrogates), as the callers' input checks guarantee.
 */
export function appendTupleString(prefix: Buffer, value: string): Buffer {
  if (isShortAscii(value)) {
    const at = prefix.length;
    const key = Buffer.allocUnsafe(at + value.length + 2);
    copyPrefix(key, prefix);
    key[at] = TUPLE_STRING_CODE;
    writeAscii(key, at + 1, value);
    key[key.length - 1] = 0x00;
    return key;
  }
  // A NUL needs escaping: rare in ids, so left to fdb-tuple.
  if (value.includes('\u0000')) return Buffer.concat([prefix, pack(value)]);
  const length = Buffer.byteLength(value, 'utf8');
  const key = Buffer.allocUnsafe(prefix.length + length + 2);
  key.set(prefix, 0);
  key[prefix.length] = TUPLE_STRING_CODE;
  key.write(value, prefix.length + 1, length, 'utf8');
  key[key.length - 1] = 0x00;
  return key;
}

/** Ids up to this many characters are checked and copied in JavaScript when they are ASCII. */
const MAX_SHORT_ASCII = 64;

/**
 * Whether `value` is short and made only of ASCII characters other than NUL:
 * then its UTF-8 bytes are its character codes, and a loop in JavaScript
 * measures and writes a typical id in less time than `includes`,
 * `Buffer.byteLength` and `Buffer#write` (calls into C++) take together. Job, pending and activity keys are built several times per job.
 */
export function isShortAscii(value: string): boolean {
  const length = value.length;
  if (length > MAX_SHORT_ASCII) return false;
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code === 0 || code > 0x7f) return false;
  }
  return true;
}

/** Writes an {@link isShortAscii} string at `offset`, one byte per character. */
export function writeAscii(target: Buffer, offset: number, value: string): void {
  for (let i = 0; i < value.length; i++) target[offset + i] = value.charCodeAt(i);
}

/** Copies a short cached prefix to the start of `target` (a loop beats `set` at a few dozen bytes). */
export function copyPrefix(target: Buffer, prefix: Buffer): void {
  // The length read once: re-reading a typed array's length on every byte is a visible share of a key build.
  const length = prefix.length;
  for (let i = 0; i < length; i++) target[i] = prefix[i] as number;
}

/**
 * Writes the element `pack({ type: 'double', value })` at `offset`: typecode
 * 0x21, then the IEEE bytes big-endian with the sign bit flipped for a
 * positive number and every bit flipped for a negative one, so that the
 * bytes sort like the numbers.
 */
export function writeTupleDouble(target: Buffer, offset: number, value: number): void {
  target[offset] = DOUBLE_CODE;
  target.writeDoubleBE(value, offset + 1);
  if (((target[offset + 1] as number) & 0x80) !== 0) {
    for (let i = offset + 1; i < offset + TUPLE_DOUBLE_BYTES; i++) target[i] = ~(target[i] as number) & 0xff;
  } else {
    target[offset + 1] = (target[offset + 1] as number) ^ 0x80;
  }
}
