// Versionstamps inside tuple keys and values (FoundationDB's): a tuple element
// with typecode 0x33 holds 10 bytes filled at commit (8-byte commit version +
// 2-byte batch order) and a 2-byte user version chosen by the writer.

import { pack, packUnboundVersionstamp, unboundVersionstamp } from 'fdb-tuple';
import { JobsError } from '../errors.js';

/** Bytes of a complete tuple versionstamp: 10 from the commit + 2 user bytes. */
export const TUPLE_VERSIONSTAMP_LENGTH = 12;
/** Bytes the storage engine fills in at commit. */
export const COMMIT_VERSIONSTAMP_LENGTH = 10;

/**
 * A versionstamp as 24 lowercase hex characters (the 12 tuple bytes). Hex
 * strings sort like the bytes they encode and survive structured cloning, so
 * actors in other threads can hold and compare them.
 */
export type Versionstamp = string;

/** The smallest versionstamp: every recorded stamp is >= this one. */
export const ZERO_VERSIONSTAMP: Versionstamp = '0'.repeat(TUPLE_VERSIONSTAMP_LENGTH * 2);

const VERSIONSTAMP_PATTERN = /^[0-9a-f]{24}$/;

export function isVersionstamp(value: unknown): value is Versionstamp {
  return typeof value === 'string' && VERSIONSTAMP_PATTERN.test(value);
}

export function versionstampFromBytes(bytes: Uint8Array): Versionstamp {
  if (bytes.length !== TUPLE_VERSIONSTAMP_LENGTH) {
    throw new JobsError('invalid_versionstamp', `a tuple versionstamp has ${TUPLE_VERSIONSTAMP_LENGTH} bytes, got ${bytes.length}`);
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

export function versionstampToBytes(stamp: Versionstamp): Buffer {
  if (!isVersionstamp(stamp)) throw new JobsError('invalid_versionstamp', `not a versionstamp: ${String(stamp)}`);
  return Buffer.from(stamp, 'hex');
}

/**
 * The tuple encoding of one versionstamp element with its 10 commit bytes
 * still unset, and where those bytes start. The storage engine's
 * `setVersionstampedKey/Value` fill them in at commit.
 */
export interface VersionstampTemplate {
  bytes: Buffer;
  /** Offset of the 10 commit bytes inside `bytes`. */
  offset: number;
}

/** The encoded element `versionstamp(unset, userVersion)` (computed by fdb-tuple). */
export function versionstampElement(userVersion = 0): VersionstampTemplate {
  const { data, stampPos } = packUnboundVersionstamp([unboundVersionstamp(userVersion)]);
  return { bytes: data, offset: stampPos };
}

/**
 * The encoded element of a known versionstamp: typecode 0x33 followed by its
 * 12 bytes, byte-identical to what {@link versionstampElement} becomes after
 * commit. Used to address a row whose key was versionstamped earlier.
 */
export function completeVersionstampElement(stamp: Uint8Array): Buffer {
  if (stamp.length !== TUPLE_VERSIONSTAMP_LENGTH) {
    throw new JobsError('invalid_versionstamp', `a tuple versionstamp has ${TUPLE_VERSIONSTAMP_LENGTH} bytes, got ${stamp.length}`);
  }
  return pack([{ type: 'versionstamp', value: Buffer.from(stamp) }]);
}
