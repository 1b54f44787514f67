// The keys-only range read the jobs layer reads the pending queue with
// (getRangeKeysSnapshot): for any store of short keys and long ones (which
// live in shared buckets), any bounds (long ones too) and any limit, with or
// without the transaction's own writes in the range, it returns exactly the
// keys of the snapshot range read, in order, and adds no read conflict.

import test from 'ava';
import { FdbError } from '@jobtree/core';
import type { Transaction } from '@jobtree/core';
import { getRangeKeysSnapshot } from '../../packages/core/src/storage/fast-paths.js';
import { seededRandom } from '../seeded-random.js';
import { openTempDatabase } from './temp-database.js';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);

/** Keys of a few shapes: short, long in two buckets, long ones that share a short key's start. */
function keyOf(next: () => number): Buffer {
  const n = Math.floor(next() * 30);
  switch (Math.floor(next() * 4)) {
    case 0:
      return b(`k/${String(n).padStart(2, '0')}`);
    case 1:
      return Buffer.concat([b('k/'), Buffer.alloc(1_950, 0x61), b(String(n).padStart(2, '0'))]);
    case 2:
      return Buffer.concat([b('k/'), Buffer.alloc(1_950, 0x62), b(String(n).padStart(2, '0'))]);
    default:
      return Buffer.concat([b(`k/${String(n).padStart(2, '0')}`), Buffer.alloc(1_920, 0x30)]);
  }
}

const hexes = (keys: readonly Buffer[]) => keys.map((key) => key.toString('hex'));

test('keys-only range reads return the keys a snapshot range read returns, for any store, bounds and limit', async (t) => {
  const db = await openTempDatabase(t, 'keys-only-range-reads');
  const next = seededRandom(18_003);
  await db.doTransaction((tx) => {
    for (let i = 0; i < 120; i++) tx.set(keyOf(next), next() < 0.5 ? Buffer.alloc(0) : b(`v${i}`));
  });
  for (let round = 0; round < 200; round++) {
    const x = keyOf(next);
    const y = keyOf(next);
    const [start, end] = Buffer.compare(x, y) <= 0 ? [x, y] : [y, x];
    const limit = next() < 0.3 ? Number.POSITIVE_INFINITY : 1 + Math.floor(next() * 40);
    const ownWrite = next() < 0.3 ? keyOf(next) : undefined;
    const [keys, pairs] = await db.doTransaction(
      async (tx: Transaction) => {
        if (ownWrite !== undefined) tx.set(ownWrite, b('own'));
        const read = getRangeKeysSnapshot(tx, start, end, { limit });
        const keys = Array.isArray(read) ? read : await read;
        return [keys, await tx.snapshot().getRange(start, end, { limit })] as const;
      },
      { retryLimit: 0 },
    );
    t.deepEqual(hexes(keys), hexes(pairs.map((pair) => pair.key)), `round ${round}: limit ${limit}, own write ${ownWrite !== undefined}`);
  }
});

test('a keys-only range read adds no read conflict, and its keys are the caller\'s own', async (t) => {
  const db = await openTempDatabase(t, 'keys-only-range-reads');
  await db.doTransaction((tx) => {
    for (let i = 0; i < 5; i++) tx.set(b(`q/${i}`), Buffer.alloc(0));
  });
  const { promise: released, resolve: release } = deferred();
  const { promise: readDone, resolve: hasRead } = deferred();
  const reader = db
    .doTransaction(
      async (tx) => {
        const read = getRangeKeysSnapshot(tx, b('q/'), b('q0'), { limit: 10 });
        const keys = Array.isArray(read) ? read : await read;
        for (const key of keys) key.fill(0x7a);
        hasRead();
        await released;
        tx.set(b('out'), b(String(keys.length)));
      },
      { retryLimit: 0 },
    )
    .then(
      () => 'committed',
      (error: unknown) => (error instanceof FdbError ? error.code : String(error)),
    );
  await readDone;
  await db.doTransaction((tx) => tx.set(b('q/9'), Buffer.alloc(0)));
  release();
  t.is(await reader, 'committed');
  const stored = await db.doTransaction((tx) => tx.getRange(b('q/'), b('q0')));
  t.deepEqual(
    stored.map((pair) => pair.key.toString()),
    ['q/0', 'q/1', 'q/2', 'q/3', 'q/4', 'q/9'],
  );
});
