// The data table decodes values itself (lmdb-store.ts, COPYING_BINARY):
// each value a read returns is copied out of lmdb's reusable read buffer,
// or out of its memory map for a large value. These tests pin down that
// every size comes back whole and as the caller's own copy, through range
// reads and point reads, short keys and long ones (whose buckets are read
// through the same decoding).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { openDatabase } from '@jobtree/core';
import type { Database, KeyValue } from '@jobtree/core';

const SIZES = [0, 1, 63, 64, 65, 150, 4_095, 4_096, 4_097, 20_000, 65_536, 100_000];

async function openTemp(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-range-values-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

/** A value whose every byte depends on its index and size, so a shifted or shared copy shows. */
function patterned(size: number, seed: number): Buffer {
  const value = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) value[i] = (i * 31 + size + seed) & 0xff;
  return value;
}

/** Checks that `rows` hold the patterned values of SIZES, in order. */
function expectValues(t: ExecutionContext, rows: readonly KeyValue[], seed: number, what: string): void {
  t.is(rows.length, SIZES.length, what);
  for (let i = 0; i < rows.length; i++) {
    t.true((rows[i] as KeyValue).value.equals(patterned(SIZES[i] as number, seed)), `${what}, ${SIZES[i]} bytes`);
  }
}

function shortKey(i: number): Buffer {
  return Buffer.from(`v/${String(i).padStart(3, '0')}`);
}

function longKey(i: number): Buffer {
  return Buffer.concat([Buffer.from('w/'), Buffer.alloc(1_950, 0x6c), Buffer.from(String(i).padStart(3, '0'))]);
}

test('range and point reads return every value size whole, short keys and long ones', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (let i = 0; i < SIZES.length; i++) {
      tx.set(shortKey(i), patterned(SIZES[i] as number, 1));
      tx.set(longKey(i), patterned(SIZES[i] as number, 2));
    }
  });
  await db.doTransaction(async (tx) => {
    const rows = await tx.getRange(Buffer.from('v/'), Buffer.from('v0'));
    t.deepEqual(
      rows.map((row) => row.value.length),
      SIZES,
    );
    expectValues(t, rows, 1, 'short key');
    expectValues(t, await tx.getRange(Buffer.from('w/'), Buffer.from('w0')), 2, 'long key');
    for (let i = 0; i < SIZES.length; i++) {
      t.true((await tx.get(shortKey(i)))?.equals(patterned(SIZES[i] as number, 1)), `point read, ${SIZES[i]} bytes`);
      t.true((await tx.get(longKey(i)))?.equals(patterned(SIZES[i] as number, 2)), `long point read, ${SIZES[i]} bytes`);
    }
  });
});

test('values from one range read stay as read through later reads and after the caller changes them', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (let i = 0; i < SIZES.length; i++) tx.set(shortKey(i), patterned(SIZES[i] as number, 3));
  });
  const first = await db.doTransaction((tx) => tx.getRange(Buffer.from('v/'), Buffer.from('v0')));
  // Later reads go through the same lmdb buffers; newer values too.
  await db.doTransaction((tx) => {
    for (let i = 0; i < SIZES.length; i++) tx.set(shortKey(i), patterned(SIZES[i] as number, 4));
  });
  const second = await db.doTransaction((tx) => tx.getRange(Buffer.from('v/'), Buffer.from('v0')));
  expectValues(t, first, 3, 'first read');
  for (const row of second) row.value.fill(0x21);
  expectValues(t, await db.doTransaction((tx) => tx.getRange(Buffer.from('v/'), Buffer.from('v0'))), 4, 'after changing a read');
  expectValues(t, first, 3, 'first read again');
});
