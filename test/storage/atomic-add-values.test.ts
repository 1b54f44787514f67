// The value an atomic add leaves behind, as FoundationDB defines it: the
// stored bytes read as a little-endian integer (missing = 0, shorter = zero
// extended, longer = cut to 8 bytes) plus the operand, wrapping at 2^64.
// Counter deltas (safe integers of either sign) are summed without bigints:
// these pin that sum to the bigint definition, carries and wraps included.

import test from 'ava';
import fc from 'fast-check';
import { addOperand, applyAdd } from '../../packages/core/src/storage/atomic-add.js';

const MOD = 1n << 64n;

/** The definition, in bigints. */
function expected(base: Uint8Array | undefined, operand: bigint): Buffer {
  let current = 0n;
  for (let i = Math.min(base?.length ?? 0, 8) - 1; i >= 0; i--) current = (current << 8n) | BigInt((base as Uint8Array)[i] as number);
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE((current + operand) % MOD);
  return out;
}

const le = (value: bigint): Buffer => {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(BigInt.asUintN(64, value));
  return out;
};

test('an add of any delta to any stored value gives the little-endian sum modulo 2^64', (t) => {
  const base = fc.option(fc.uint8Array({ maxLength: 12 }), { nil: undefined });
  const delta = fc.oneof(
    fc.integer({ min: -1000, max: 1000 }),
    fc.maxSafeInteger(),
    fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 32, -(2 ** 32), 2 ** 32 - 1, 1 - 2 ** 32),
    fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
  );
  fc.assert(
    fc.property(base, delta, (stored, d) => {
      const operand = addOperand(d);
      t.deepEqual(applyAdd(stored, operand), expected(stored, operand));
    }),
    { numRuns: 5_000 },
  );
});

test('adds carry across the 32-bit halves and wrap at both ends of the 64-bit range', (t) => {
  const cases: [bigint, number | bigint, bigint][] = [
    [0xffff_ffffn, 1, 0x1_0000_0000n],
    [0x1_0000_0000n, -1, 0xffff_ffffn],
    [MOD - 1n, 1, 0n],
    [0n, -1, MOD - 1n],
    [MOD - 1n, Number.MAX_SAFE_INTEGER, BigInt(Number.MAX_SAFE_INTEGER) - 1n],
    [5n, -Number.MAX_SAFE_INTEGER, MOD + 5n - BigInt(Number.MAX_SAFE_INTEGER)],
    [0x1234_5678_9abc_def0n, 1n << 40n, 0x1234_5778_9abc_def0n],
  ];
  for (const [stored, delta, sum] of cases) t.deepEqual(applyAdd(le(stored), addOperand(delta)), le(sum), `${stored} + ${delta}`);
  t.deepEqual(applyAdd(undefined, addOperand(-2)), le(MOD - 2n), 'a missing value counts as 0');
  t.deepEqual(applyAdd(Uint8Array.of(0xff, 0xff), addOperand(1)), le(0x1_0000n), 'a short value is zero extended');
  t.deepEqual(applyAdd(Buffer.from('0100000000000000ff', 'hex'), addOperand(1)), le(2n), 'a long value is cut to 8 bytes');
});
