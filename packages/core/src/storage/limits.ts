// FoundationDB's size limits and argument rules, shared by every backend so
// that code which works on the embedded engine also works on FoundationDB.

import { FdbError, FdbErrorCode } from '../errors.js';

/** Largest key FoundationDB accepts, in bytes. */
export const MAX_KEY_BYTES = 10_000;
/** Largest value FoundationDB accepts, in bytes. */
export const MAX_VALUE_BYTES = 100_000;
/** Largest transaction (mutations plus conflict ranges) FoundationDB accepts, in bytes. */
export const MAX_TRANSACTION_BYTES = 10_000_000;
/** A transaction may not read or commit more than this long after its read version was taken. */
export const TRANSACTION_LIFE_MS = 5_000;
/** Length of a versionstamp: 8-byte commit version + 2-byte batch order. */
export const VERSIONSTAMP_BYTES = 10;

function describe(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  return typeof input === 'object' ? `a ${input.constructor?.name ?? 'object'}` : `a ${typeof input}`;
}

/** A Buffer view over the same bytes (no copy), so Buffer methods work on any Uint8Array. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Checks a key given to any operation and returns it as a Buffer view.
 * Keys in `\xff...` are FoundationDB's system keyspace, which user
 * transactions may not touch.
 */
export function checkKey(key: unknown, what = 'key'): Buffer {
  if (!(key instanceof Uint8Array)) {
    throw new FdbError(FdbErrorCode.client_invalid_operation, `${what} must be a Uint8Array or Buffer, got ${describe(key)}`);
  }
  // `length`, not `byteLength` (the same for bytes): V8 reads it several times faster on a Buffer.
  const length = key.length;
  if (length > MAX_KEY_BYTES) {
    throw new FdbError(FdbErrorCode.key_too_large, `${what} is ${length} bytes; the limit is ${MAX_KEY_BYTES}`);
  }
  if (length > 0 && key[0] === 0xff) {
    throw new FdbError(FdbErrorCode.key_outside_legal_range, `${what} starts with 0xff, the system keyspace`);
  }
  return asBuffer(key);
}

/** Checks a range end, which may be exactly `\xff` (the end of the user keyspace). */
export function checkRangeEnd(key: unknown, what = 'range end'): Buffer {
  if (key instanceof Uint8Array && key.length === 1 && key[0] === 0xff) return asBuffer(key);
  return checkKey(key, what);
}

/** Checks a value and returns it as a Buffer view. */
export function checkValue(value: unknown, what = 'value'): Buffer {
  if (!(value instanceof Uint8Array)) {
    throw new FdbError(FdbErrorCode.client_invalid_operation, `${what} must be a Uint8Array or Buffer, got ${describe(value)}`);
  }
  if (value.length > MAX_VALUE_BYTES) {
    throw new FdbError(FdbErrorCode.value_too_large, `${what} is ${value.length} bytes; the limit is ${MAX_VALUE_BYTES}`);
  }
  return asBuffer(value);
}

/** Checks `start <= end` for a range. */
export function checkRange(start: Buffer, end: Buffer): void {
  if (Buffer.compare(start, end) > 0) {
    throw new FdbError(
      FdbErrorCode.inverted_range,
      `range start ${start.toString('hex')} is after its end ${end.toString('hex')}`,
    );
  }
}

/** Checks the `offset` of a versionstamp inside a key or value template. */
export function checkVersionstampOffset(template: Buffer, offset: unknown): number {
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0 || offset + VERSIONSTAMP_BYTES > template.length) {
    throw new FdbError(
      FdbErrorCode.client_invalid_operation,
      `versionstamp offset ${String(offset)} does not leave ${VERSIONSTAMP_BYTES} bytes inside a ${template.length}-byte template`,
    );
  }
  return offset;
}
