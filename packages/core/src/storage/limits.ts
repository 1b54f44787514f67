// FoundationDB's size limits and argument rules, shared by every backend so
// that code which works on the embedded engine also works on FoundationDB.

import { FdbError, FdbErrorCode } from '../errors.js';
import { OptionNames } from '../option-names.js';

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

/**
 * Names what a bad argument was, for error messages. Never converts the
 * argument itself (`String(x)` throws for an object without a usable
 * `toString`, and recurses without bound through a deeply nested array),
 * and survives objects whose `constructor` getter throws.
 */
export function describe(input: unknown): string {
  if (input === null) return 'null';
  if (input === undefined) return 'undefined';
  switch (typeof input) {
    case 'number':
    case 'bigint':
    case 'boolean':
      return `a ${typeof input} (${String(input)})`;
    case 'string':
    case 'symbol':
    case 'function':
      return `a ${typeof input}`;
  }
  if (Array.isArray(input)) return 'an array';
  try {
    const name = (input as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object';
  } catch {
    return 'an object';
  }
}

/**
 * A copy of `bytes` (a checked key or value), so that a caller changing its
 * buffer later cannot change a pending write. `allocUnsafe` + `set` is
 * cheaper than `Buffer.from(buffer)`, which goes through its generic object
 * path first; both take small buffers from Node's pool.
 */
export function copyBytes(bytes: Buffer): Buffer {
  // An empty one is a fresh view of an empty buffer: `allocUnsafe(0)` takes a slow path.
  if (bytes.length === 0) return NO_BYTES.subarray(0, 0);
  const copy = Buffer.allocUnsafe(bytes.length);
  copy.set(bytes);
  return copy;
}

const NO_BYTES = Buffer.alloc(0);

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
  if (typeof offset !== 'number' || !Number.isInteger(offset)) {
    throw new FdbError(FdbErrorCode.client_invalid_operation, `versionstamp offset must be an integer, got ${describe(offset)}`);
  }
  if (offset < 0 || offset + VERSIONSTAMP_BYTES > template.length) {
    throw new FdbError(
      FdbErrorCode.client_invalid_operation,
      `versionstamp offset ${offset} does not leave ${VERSIONSTAMP_BYTES} bytes inside a ${template.length}-byte template`,
    );
  }
  return offset;
}

/**
 * Checks a range read's `limit`: a non-negative integer, or `Infinity`;
 * 0 means no limit, as in FoundationDB. Returns it with "no limit" as `Infinity`.
 */
export function checkRangeLimit(limit: unknown): number {
  if (limit === undefined) return Number.POSITIVE_INFINITY;
  if (typeof limit !== 'number' || !(limit >= 0) || (!Number.isInteger(limit) && limit !== Number.POSITIVE_INFINITY)) {
    throw new FdbError(FdbErrorCode.invalid_option_value, `range limit must be a non-negative integer, got ${describe(limit)}`);
  }
  return limit === 0 ? Number.POSITIVE_INFINITY : limit;
}

const RANGE_OPTIONS = new OptionNames('getRange', ['limit', 'reverse']);

/** The range options object itself: absent, or an object with only `limit` and `reverse`. */
export function checkRangeOptions(options: unknown): { limit?: unknown; reverse?: unknown } | undefined {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== 'object') {
    throw new FdbError(FdbErrorCode.invalid_option_value, `range options must be an object, got ${describe(options)}`);
  }
  const unknown = RANGE_OPTIONS.unknownIn(options);
  if (unknown !== undefined) throw new FdbError(FdbErrorCode.invalid_option_value, unknown);
  return options as { limit?: unknown; reverse?: unknown };
}
