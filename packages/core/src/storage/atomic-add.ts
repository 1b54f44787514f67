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

/** The value an add of `operand` leaves behind when the key held `base`. */
export function applyAdd(base: Uint8Array | undefined, operand: bigint): Buffer {
  let current = 0n;
  if (base !== undefined) {
    const n = Math.min(base.length, ADD_OPERAND_BYTES);
    for (let i = n - 1; i >= 0; i--) current = (current << 8n) | BigInt(base[i] ?? 0);
  }
  const out = Buffer.allocUnsafe(ADD_OPERAND_BYTES);
  out.writeBigUInt64LE((current + operand) % MOD);
  return out;
}
