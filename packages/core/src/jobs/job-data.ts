// Job data is JSON, as in couch_jobs: any value that encodes as JSON and
// back unchanged. Anything JSON.stringify would silently drop or change
// (undefined, functions, NaN, Map, BigInt, ...) is rejected up front, so
// what a worker reads back is exactly what the creator wrote.

import { JobsError } from '../errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * The largest encoded job data, in bytes. The data row must stay under the
 * storage value limit (100 kB, see docs/architecture.md) with room for its header.
 */
export const MAX_JOB_DATA_BYTES = 96 * 1024;

class NotJson extends Error {}

function rejectNonJson(this: unknown, key: string, value: unknown): unknown {
  // JSON.stringify calls toJSON before the replacer, so `value` may already
  // be a stand-in (a Date's string): look at what the holder really holds.
  const original = (this as Record<string, unknown>)[key];
  if (hasToJson(original)) {
    throw new NotJson(`${where(key)} is ${kindOf(original)} with a toJSON method, so it would not read back as written`);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(`${where(key)} is ${value}, which JSON cannot represent`);
      return value;
    case 'object': {
      if (value === null || Array.isArray(value)) return value;
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new NotJson(`${where(key)} is a ${proto?.constructor?.name ?? 'non-plain'} object, not a plain object`);
      }
      return value;
    }
    default:
      throw new NotJson(`${where(key)} is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}`);
  }
}

/** Nesting past which the walk leaves the check to the replacer (which also reports cycles). */
const MAX_WALK_DEPTH = 64;

/**
 * Whether JSON.stringify encodes `value` exactly as it is: what
 * `rejectNonJson` accepts everywhere, found without calling into a replacer
 * for every key. False does not mean invalid, only "let the replacer decide".
 */
function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_WALK_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
      if (Array.isArray(value)) {
        // A hole reads as undefined, which is not plain.
        for (let i = 0; i < value.length; i++) if (!isPlainJson(value[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) if (!isPlainJson(record[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** Whether JSON.stringify would call a toJSON method: it does so for objects and BigInts only. */
function hasToJson(value: unknown): boolean {
  if (typeof value === 'object') return value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function';
  if (typeof value === 'bigint') return typeof (BigInt.prototype as { toJSON?: unknown }).toJSON === 'function';
  return false;
}

function kindOf(value: unknown): string {
  if (typeof value !== 'object' || value === null) return `a ${typeof value}`;
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
  const name = proto === Object.prototype ? undefined : proto?.constructor?.name;
  return name ? `a ${name}` : 'an object';
}

function where(key: string): string {
  return key === '' ? 'the data' : `the value at key ${JSON.stringify(key)}`;
}

/**
 * The UTF-8 JSON encoding of `data`, or `JobsError('invalid_job_data')` when
 * `data` is not JSON: undefined (also at the top), functions, symbols,
 * BigInt, non-finite numbers, cycles, non-plain objects, values with a
 * `toJSON` method (a Date would read back as a string), sparse arrays, or
 * more than {@link MAX_JOB_DATA_BYTES} once encoded.
 */
export function encodeJobData(data: unknown): Buffer {
  let json: string;
  try {
    // Plain JSON (nearly all data) is checked by a walk and encoded without
    // a replacer, which would cost JSON.stringify its fast path. Anything
    // else takes the replacer, which says what is wrong.
    json = isPlainJson(data, 0) ? JSON.stringify(data) : JSON.stringify(data, rejectNonJson);
  } catch (error) {
    const reason = error instanceof NotJson ? error.message : `JSON.stringify failed: ${(error as Error).message}`;
    throw new JobsError('invalid_job_data', `job data must be JSON: ${reason}`, { cause: error });
  }
  const bytes = Buffer.from(json, 'utf8'); // lone surrogates are already \u-escaped by JSON.stringify
  if (bytes.length > MAX_JOB_DATA_BYTES) {
    throw new JobsError('invalid_job_data', `job data is ${bytes.length} bytes once encoded; the limit is ${MAX_JOB_DATA_BYTES}`);
  }
  return bytes;
}

export function decodeJobData(bytes: Uint8Array): JsonValue {
  return decodeJobDataAt(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0);
}

/** {@link decodeJobData} of the bytes of `value` from `start` on, with no view of them made first. */
export function decodeJobDataAt(value: Buffer, start: number): JsonValue {
  // Every accept decodes its jobs' data; most jobs carry none (`null`).
  if (isNullData(value, start)) return null;
  return JSON.parse(value.toString('utf8', start)) as JsonValue;
}

/** Whether the bytes from `start` to the end are exactly `null`, the data of a job created without any. */
function isNullData(bytes: Uint8Array, start: number): boolean {
  return (
    bytes.length - start === 4 && bytes[start] === 0x6e && bytes[start + 1] === 0x75 && bytes[start + 2] === 0x6c && bytes[start + 3] === 0x6c
  );
}

/** `null`, the data of a job created without any. */
export const NULL_JOB_DATA: Buffer = encodeJobData(null);
