// FoundationDB's atomic `add` mutation with an 8-byte operand: the stored
// value is read as a little-endian integer (missing = 0, shorter = zero
// extended, longer = truncated to the operand's 8 bytes) and the sum wraps
// at 2^64. Because every operand is 8 bytes, several adds to one key in one
// transaction fold into a single operand.

import { FdbError, FdbErrorCode } from '../errors.js';

const MOD = 1n << 64n;
/** The operand length: a 64-bit little-endian integer. */
export const ADD_OPERAND_BYTES = 8;

/** Validates an `atomicAdd` delta and returns it reduced modulo 2^64. */
export function addOperand(delta: unknown): bigint {
  if (typeof delta === 'bigint') {
    if (delta < -(1n << 63n) || delta >= MOD) {
      throw new FdbError(FdbErrorCode.client_invalid_operation, `atomicAdd delta ${delta} does not fit in 64 bits`);
    }
    return BigInt.asUintN(64, delta);
  }
  if (typeof delta === 'number' && Number.isSafeInteger(delta)) return BigInt.asUintN(64, BigInt(delta));
  throw new FdbError(
    FdbErrorCode.client_invalid_operation,
    `atomicAdd delta must be a safe integer or a bigint, got ${typeof delta === 'number' ? delta : typeof delta}`,
  );
}

/** Folds two operands into one (addition is associative modulo 2^64). */
export function foldOperands(a: bigint, b: bigint): bigint {
  return (a + b) % MOD;
}

const TWO_32 = 2 ** 32;
/** Operands up to this, and from MOD less it on (negative deltas), are exact as numbers. */
const SAFE_OPERAND = BigInt(Number.MAX_SAFE_INTEGER);
const NEGATIVE_SAFE_OPERAND = MOD - SAFE_OPERAND;

/**
 * The value an add of `operand` leaves behind when the key held `base`.
 * A counter's add (a safe integer, either sign) is summed in two 32-bit
 * halves: with bigints every byte read and every step of the sum is an
 * object of its own, and the store applies adds on every commit.
 */
export function applyAdd(base: Uint8Array | undefined, operand: bigint): Buffer {
  const out = Buffer.allocUnsafe(ADD_OPERAND_BYTES);
  if (operand <= SAFE_OPERAND) addInHalves(out, base, Number(operand));
  else if (operand >= NEGATIVE_SAFE_OPERAND) addInHalves(out, base, -Number(MOD - operand));
  else out.writeBigUInt64LE((bigValueOf(base) + operand) % MOD);
  return out;
}

/** Writes `base` (as a little-endian integer, see the file's comment) plus the safe integer `delta`, modulo 2^64, into `out`. */
function addInHalves(out: Buffer, base: Uint8Array | undefined, delta: number): void {
  let low = 0;
  let high = 0;
  if (base !== undefined) {
    const n = Math.min(base.length, ADD_OPERAND_BYTES);
    for (let i = n - 1; i >= 4; i--) high = high * 256 + (base[i] as number);
    for (let i = Math.min(n, 4) - 1; i >= 0; i--) low = low * 256 + (base[i] as number);
  }
  const deltaLow = delta % TWO_32;
  low += deltaLow;
  // `low` is now above -2^32 and below 2^33: the carry is -1, 0 or 1.
  const carry = Math.floor(low / TWO_32);
  low -= carry * TWO_32;
  high = (((high + (delta - deltaLow) / TWO_32 + carry) % TWO_32) + TWO_32) % TWO_32;
  out.writeUInt32LE(low, 0);
  out.writeUInt32LE(high, 4);
}

function bigValueOf(base: Uint8Array | undefined): bigint {
  let current = 0n;
  if (base !== undefined) {
    const n = Math.min(base.length, ADD_OPERAND_BYTES);
    for (let i = n - 1; i >= 0; i--) current = (current << 8n) | BigInt(base[i] ?? 0);
  }
  return current;
}
