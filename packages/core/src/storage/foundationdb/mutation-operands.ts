// The byte operands FoundationDB's atomic mutations take, built from the
// adapter's arguments. FoundationDB (API version >= 520) reads the position of
// a versionstamp from a 4-byte little-endian offset appended to the operand;
// the ADD mutation adds little-endian integers. Pure functions, unit-tested
// without the native client.

import { addOperand } from '../atomic-add.js';
import { checkVersionstampOffset } from '../limits.js';
import type { Keyspace } from './keyspace.js';

const OFFSET_SUFFIX_LENGTH = 4;
const ADD_OPERAND_LENGTH = 8;

function withOffsetSuffix(bytes: Uint8Array, offset: number): Buffer {
  const operand = Buffer.allocUnsafe(bytes.length + OFFSET_SUFFIX_LENGTH);
  operand.set(bytes, 0);
  operand.writeUInt32LE(offset, bytes.length);
  return operand;
}

/**
 * The key operand of SET_VERSIONSTAMPED_KEY for the caller's key template:
 * the template moves into the directory prefix, so the stamp's offset moves
 * by the prefix length too.
 */
export function versionstampedKeyOperand(keyspace: Keyspace, keyTemplate: Buffer, offset: number): Buffer {
  checkVersionstampOffset(keyTemplate, offset);
  return withOffsetSuffix(keyspace.pack(keyTemplate), offset + keyspace.prefix.length);
}

/** The value operand of SET_VERSIONSTAMPED_VALUE: values are not prefixed, so the offset stays. */
export function versionstampedValueOperand(valueTemplate: Buffer, offset: number): Buffer {
  checkVersionstampOffset(valueTemplate, offset);
  return withOffsetSuffix(valueTemplate, offset);
}

/**
 * The operand of the ADD mutation: `delta` as an 8-byte little-endian
 * two's-complement integer, so a negative delta subtracts (addition wraps
 * modulo 2^64, as on the embedded engine). Validation is the engine's, so both
 * backends refuse the same deltas.
 */
export function addMutationOperand(delta: number | bigint): Buffer {
  const operand = Buffer.allocUnsafe(ADD_OPERAND_LENGTH);
  operand.writeBigUInt64LE(addOperand(delta));
  return operand;
}
