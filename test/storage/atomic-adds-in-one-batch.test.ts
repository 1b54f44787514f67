// Atomic adds of the embedded engine read the latest value of their key in
// the commit batch they join: an earlier member's set, clear or add of that
// key, else the store's value. Whether the batch's adds touch few keys (each
// is looked for among the batch's changes) or many (the batch's map of
// changes is built), the sums are the same.

import test from 'ava';
import { openTempDatabase } from './temp-database.js';

const b = (text: string): Buffer => Buffer.from(text);
const counter = (value: bigint): Buffer => {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(value);
  return out;
};

for (const addedKeys of [3, 12]) {
  test(`with ${addedKeys} keys added to in one batch, each add reads what the members before it in the batch left`, async (t) => {
    const db = await openTempDatabase(t, `adds-${addedKeys}`);
    // Same length and, for some, the same last byte ('c/01', 'c/11'): keys that differ only inside.
    const keys = Array.from({ length: addedKeys }, (_, index) => b(`c/${String(index).padStart(2, '0')}`));
    const [first, second] = keys as [Buffer, Buffer];
    await db.doTransaction((tx) => {
      for (const key of keys) tx.set(key, counter(1000n));
      tx.set(b('gone'), counter(7n));
    });
    // Committed in one turn, the transactions share a batch, applied in this order.
    await Promise.all([
      db.doTransaction((tx) => {
        for (const key of keys) tx.set(key, counter(10n));
        tx.set(b('other'), b('value'));
      }),
      db.doTransaction((tx) => {
        for (const [index, key] of keys.entries()) tx.atomicAdd(key, index + 1);
        tx.clear(b('gone'));
      }),
      db.doTransaction((tx) => {
        tx.atomicAdd(first, 100);
        tx.set(second, counter(5n));
        tx.atomicAdd(b('gone'), 2);
      }),
      db.doTransaction((tx) => {
        tx.atomicAdd(second, 1);
        tx.atomicAdd(b('gone'), 3);
        tx.atomicAdd(b('new'), 4);
      }),
    ]);
    const values = await db.doTransaction(async (tx) => Promise.all([...keys, b('gone'), b('new')].map((key) => tx.get(key))));
    const read = values.map((value) => (value === undefined ? undefined : Buffer.from(value).readBigUInt64LE()));
    const expected = keys.map((_, index) => 10n + BigInt(index + 1));
    expected[0] = 111n;
    expected[1] = 6n;
    t.deepEqual(read, [...expected, 5n, 4n]);
  });
}
