// An accept reads its page of the pending queue keys only: every entry's
// value is empty, and on the embedded engine a range that none of the
// transaction's own writes touch is read without copying values out of
// lmdb. The keys must be exactly those `snapshot().getRange` reads, in every
// case the general read handles: the transaction's own sets and clears,
// long keys (stored in buckets), the empty key, limits; and with no read
// conflict. Any other transaction is read through its public range read.

import test from 'ava';
import { type Database, openDatabase, type Transaction } from '@jobtree/core';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getRangeKeysSnapshot } from '../../packages/core/src/storage/fast-paths.js';

const b = (text: string) => Buffer.from(text);
/** Keys longer than the store's in-place limit (1,900 bytes) live in buckets. */
const long = (head: string, fill: string) => Buffer.concat([b(head), Buffer.alloc(2_500, fill)]);

async function openTemp(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-keys-only-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  return db;
}

/** The keys the general snapshot read returns, as strings for readable failures. */
async function generalKeys(tx: Transaction, start: Buffer, end: Buffer, limit?: number): Promise<string[]> {
  return (await tx.snapshot().getRange(start, end, limit === undefined ? undefined : { limit })).map((row) => row.key.toString('hex'));
}

function keysNow(tx: Transaction, start: Buffer, end: Buffer, limit?: number): string[] {
  const keys = getRangeKeysSnapshot(tx, start, end, limit === undefined ? undefined : { limit });
  if (!Array.isArray(keys)) throw new Error('expected an answer at once on the embedded engine');
  return keys.map((key) => key.toString('hex'));
}

test('keys-only reads give the keys of the general snapshot read, at once, with or without limits', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (let i = 0; i < 50; i++) tx.set(b(`q/${String(i).padStart(3, '0')}`), i % 2 === 0 ? b('') : b(`value ${i}`));
    tx.set(b('p'), b('before'));
    tx.set(b('r'), b('after'));
  });
  await db.doTransaction(async (tx) => {
    for (const limit of [undefined, 1, 7, 50, 51]) {
      t.deepEqual(keysNow(tx, b('q/'), b('q0'), limit), await generalKeys(tx, b('q/'), b('q0'), limit), `limit ${limit}`);
    }
    t.is(keysNow(tx, b('q/'), b('q0')).length, 50);
    t.deepEqual(keysNow(tx, b('q/010'), b('q/013')), ['q/010', 'q/011', 'q/012'].map((key) => b(key).toString('hex')));
    t.deepEqual(keysNow(tx, b('x'), b('y')), []);
  });
});

test('keys-only reads see the transaction\'s own sets and clears', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (const key of ['k1', 'k2', 'k3', 'k4']) tx.set(b(key), b(''));
  });
  await db.doTransaction(async (tx) => {
    tx.clear(b('k2'));
    tx.set(b('k25'), b(''));
    tx.clearRange(b('k4'), b('k5'));
    t.deepEqual(keysNow(tx, b('k'), b('l')), await generalKeys(tx, b('k'), b('l')));
    t.deepEqual(keysNow(tx, b('k'), b('l'), 2), await generalKeys(tx, b('k'), b('l'), 2));
    t.deepEqual(
      keysNow(tx, b('k'), b('l')).map((hex) => Buffer.from(hex, 'hex').toString()),
      ['k1', 'k25', 'k3'],
    );
  });
});

test('keys-only reads find long keys in their buckets, and only those inside the range', async (t) => {
  const db = await openTemp(t);
  const keys = [long('m', 'a'), long('m', 'b'), long('m', 'c'), b('m'), b('n')];
  await db.doTransaction((tx) => {
    for (const key of keys) tx.set(key, b(''));
  });
  await db.doTransaction(async (tx) => {
    for (const [start, end, limit] of [
      [b('m'), b('o'), undefined],
      [long('m', 'b'), b('o'), undefined],
      [b('m'), long('m', 'c'), undefined],
      [b('m'), b('o'), 2],
    ] as const) {
      t.deepEqual(keysNow(tx, start, end, limit), await generalKeys(tx, start, end, limit));
    }
    t.is(keysNow(tx, b('m'), b('o')).length, 5);
  });
});

test('keys-only reads start at the empty key as the general read does', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    tx.set(b(''), b('empty key'));
    tx.set(b('a'), b(''));
  });
  await db.doTransaction(async (tx) => {
    t.deepEqual(keysNow(tx, b(''), b('b')), await generalKeys(tx, b(''), b('b')));
    t.is(keysNow(tx, b(''), b('b')).length, 2);
  });
});

test('a keys-only read adds no read conflict', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => tx.set(b('c1'), b('')));
  let attempts = 0;
  await db.doTransaction(async (tx) => {
    attempts += 1;
    keysNow(tx, b('c'), b('d'));
    if (attempts === 1) await db.doTransaction((other) => other.set(b('c2'), b('')));
    tx.set(b('written'), b('x'));
  });
  t.is(attempts, 1);
});

test('on a transaction without the internal reads, a keys-only read is the public snapshot read\'s keys', async (t) => {
  const calls: string[] = [];
  const tx = {
    snapshot: () => ({
      getRange: (start: Buffer, end: Buffer, options?: { limit?: number }) => {
        calls.push(`snapshot range ${start} ${end} ${options?.limit}`);
        return Promise.resolve([
          { key: b('s1'), value: b('') },
          { key: b('s2'), value: b('v') },
        ]);
      },
    }),
  } as unknown as Transaction;
  const keys = getRangeKeysSnapshot(tx, b('s'), b('t'), { limit: 5 });
  t.true(keys instanceof Promise);
  t.deepEqual(await keys, [b('s1'), b('s2')]);
  t.deepEqual(calls, ['snapshot range s t 5']);
});
