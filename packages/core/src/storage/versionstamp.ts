// Versionstamps: 10 bytes = the 8-byte big-endian commit version followed by
// the 2-byte big-endian order of the transaction within its commit batch.
// They sort in commit order, so keys stamped with them form a log.

import { VERSIONSTAMP_BYTES } from './limits.js';

const TWO_TO_32 = 2 ** 32;

/** Writes a commit version as 8 bytes big-endian (versions stay below 2^53, so a number holds them). */
export function writeCommitVersion(target: Buffer, offset: number, version: number): void {
  // Byte by byte: the low word passes 2^31, and handing it to
  // `writeUInt32BE` boxed it into a heap number, twice per stamped write.
  const high = Math.floor(version / TWO_TO_32);
  const low = version - high * TWO_TO_32;
  target[offset] = high >>> 24;
  target[offset + 1] = (high >>> 16) & 0xff;
  target[offset + 2] = (high >>> 8) & 0xff;
  target[offset + 3] = high & 0xff;
  target[offset + 4] = low >>> 24;
  target[offset + 5] = (low >>> 16) & 0xff;
  target[offset + 6] = (low >>> 8) & 0xff;
  target[offset + 7] = low & 0xff;
}

/** Writes the stamp for (`version`, `order`) into `target` at `offset`. */
export function writeVersionstamp(target: Buffer, offset: number, version: number, order: number): void {
  writeCommitVersion(target, offset, version);
  target[offset + 8] = (order >>> 8) & 0xff;
  target[offset + 9] = order & 0xff;
}

/** A fresh 10-byte stamp. */
export function versionstamp(version: number, order: number): Buffer {
  const stamp = Buffer.allocUnsafe(VERSIONSTAMP_BYTES);
  writeVersionstamp(stamp, 0, version, order);
  return stamp;
}

/** The commit version a stamp (or an 8-byte version) carries. */
export function versionOfStamp(stamp: Uint8Array, offset = 0): number {
  const view = Buffer.from(stamp.buffer, stamp.byteOffset + offset, 8);
  return view.readUInt32BE(0) * TWO_TO_32 + view.readUInt32BE(4);
}
