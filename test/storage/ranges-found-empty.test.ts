// A snapshot remembers the ranges a read of it found empty, and the snapshot
// of each later small batch keeps those the batch wrote no key in: a range
// read there again opens no lmdb cursor, with or without the transaction's
// own writes in the range. A range that any later batch wrote a key in
// (set, atomic add, versionstamped key or value, in a batch of one
// transaction or several, small or large) is read from lmdb again and shows
// the key; a read answered from memory still records its read conflict range.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { FdbError, openDatabase } from '@jobtree/core';
import type { Database, Transaction } from '@jobtree/core';
import { BatchWrites } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { getRangeKeysSnapshot } from '../../packages/core/src/storage/fast-paths.js';
import { countCursors } from './cursor-count.js';

const b = (text: string) => Buffer.from(text);
const START = b('q/');
const END = b('q0');

/** The keys of `[START, END)` as one transaction reads them every way the engine can: a snapshot read, a conflict read, keys only, and through a write of its own. */
async function readEveryWay(db: Database): Promise<string[][]> {
  return db.doTransaction(
    async (tx: Transaction) => {
      const keys = (pairs: { key: Buffer }[]) => pairs.map((pair) => pair.key.toString());
      const snapshot = keys(await tx.snapshot().getRange(START, END));
      const conflict = keys(await tx.getRange(START, END));
      const read = getRangeKeysSnapshot(tx, START, END, { limit: 10 });
      const keysOnly = (Array.isArray(read) ? read : await read).map((key) => key.toString());
      const reversed = keys(await tx.snapshot().getRange(START, END, { reverse: true })).reverse();
      tx.set(b('q/~own'), b('own'));
      const withOwn = keys(await tx.getRange(START, END)).filter((key) => key !== 'q/~own');
      // Only read: the write of its own is dropped.
      throw new ReadDone([snapshot, conflict, keysOnly, reversed, withOwn]);
    },
    { retryLimit: 0 },
  ).catch((error: unknown) => {
    if (error instanceof ReadDone) return error.reads;
    throw error;
  });
}

class ReadDone extends Error {
  readonly reads: string[][];

  constructor(reads: string[][]) {
    super('read done');
    this.reads = reads;
  }
}

/** A fresh store with a key outside the range, whose range a first read found empty; `dir`: its directory. */
async function storeWithEmptyRange(t: ExecutionContext): Promise<{ db: Database; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-ranges-found-empty-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await db.doTransaction((tx) => tx.set(b('other/0'), b('x')));
  t.deepEqual(await readEveryWay(db), [[], [], [], [], []]);
  return { db, dir };
}

test('a range found empty is read again with no cursor, in its snapshot and after batches that wrote outside it', async (t) => {
  const { db, dir } = await storeWithEmptyRange(t);
  const cursors = countCursors(t, dir);
  t.deepEqual(await readEveryWay(db), [[], [], [], [], []]);
  const inside = await db.doTransaction((tx) => tx.getRange(b('q/a'), b('q/b')));
  t.deepEqual(inside, []);
  t.is(cursors.opened, 0, 'the same snapshot: no cursor');
  await db.doTransaction((tx) => {
    tx.set(b('other/1'), b('x'));
    tx.atomicAdd(b('p'), 1);
    tx.clearRange(b('q/'), b('q/m'));
  });
  t.deepEqual(await readEveryWay(db), [[], [], [], [], []]);
  t.is(cursors.opened, 0, 'a later snapshot, of a batch that wrote outside the range: no cursor');
  await db.doTransaction((tx) => tx.set(b('q/1'), b('in')));
  t.deepEqual(await readEveryWay(db), [['q/1'], ['q/1'], ['q/1'], ['q/1'], ['q/1']]);
  t.true(cursors.opened > 0, 'a batch wrote in the range: read from lmdb');
});

const writesInRange: Array<[string, (db: Database) => Promise<unknown>, string]> = [
  ['a set', (db) => db.doTransaction((tx) => tx.set(b('q/set'), b('v'))), 'q/set'],
  ['an atomic add', (db) => db.doTransaction((tx) => tx.atomicAdd(b('q/add'), 1)), 'q/add'],
  [
    'a versionstamped key',
    (db) => db.doTransaction((tx) => tx.setVersionstampedKey(Buffer.concat([b('q/s'), Buffer.alloc(10)]), 3, b('v'))),
    'q/s',
  ],
  ['a versionstamped value', (db) => db.doTransaction((tx) => tx.setVersionstampedValue(b('q/val'), Buffer.alloc(10), 0)), 'q/val'],
  [
    'a transaction sharing its batch with one that writes outside',
    (db) => Promise.all([db.doTransaction((tx) => tx.set(b('other/2'), b('x'))), db.doTransaction((tx) => tx.set(b('q/shared'), b('v')))]),
    'q/shared',
  ],
  [
    'a batch too large to be checked key by key',
    (db) =>
      db.doTransaction((tx) => {
        for (let i = 0; i < 200; i++) tx.set(b(`other/big/${i}`), b('x'));
        tx.set(b('q/big'), b('v'));
      }),
    'q/big',
  ],
];

for (const [what, write, key] of writesInRange) {
  test(`a key written in a range found empty is read by later transactions: ${what}`, async (t) => {
    const { db } = await storeWithEmptyRange(t);
    // A batch that wrote outside the range first: the range is known empty in the snapshot the write reads.
    await db.doTransaction((tx) => tx.set(b('other/1'), b('x')));
    await write(db);
    const reads = await readEveryWay(db);
    for (const keys of reads) t.true(keys.some((read) => read.startsWith(key)), `${key} read in ${JSON.stringify(reads)}`);
  });
}

test('a transaction that began before a key was written in a range found empty still reads the range empty', async (t) => {
  const { db } = await storeWithEmptyRange(t);
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => (wrote = resolve));
  const old = db.doTransaction(async (tx) => {
    await tx.get(b('other/0'));
    await written;
    return (await tx.snapshot().getRange(START, END)).length;
  });
  await db.doTransaction((tx) => tx.set(b('q/new'), b('v')));
  wrote();
  t.is(await old, 0, 'its snapshot is older than the write');
  t.deepEqual((await readEveryWay(db))[0], ['q/new']);
});

test('a range read answered from memory still records its read conflict range', async (t) => {
  const { db, dir } = await storeWithEmptyRange(t);
  const cursors = countCursors(t, dir);
  let read!: () => void;
  const hasRead = new Promise<void>((resolve) => (read = resolve));
  let go!: () => void;
  const goOn = new Promise<void>((resolve) => (go = resolve));
  const reader = db
    .doTransaction(
      async (tx) => {
        t.deepEqual(await tx.getRange(START, END), []);
        read();
        await goOn;
        tx.set(b('out'), b('saw none'));
      },
      { retryLimit: 0 },
    )
    .then(
      () => 'committed',
      (error: unknown) => (FdbError.is(error, 'not_committed') ? 'not_committed' : String(error)),
    );
  await hasRead;
  t.is(cursors.opened, 0, 'the read was answered from memory');
  await db.doTransaction((tx) => tx.set(b('q/late'), b('v')));
  go();
  t.is(await reader, 'not_committed');
});

test.serial('a commit is answered before its snapshot looks through the empty ranges it takes over; the first range read does, once', async (t) => {
  const { db, dir } = await storeWithEmptyRange(t);
  // Serial: the count is of every store in this process.
  const writesInside = BatchWrites.prototype.writesInside;
  let looks = 0;
  BatchWrites.prototype.writesInside = function (this: BatchWrites, start: Buffer, end: Buffer) {
    looks += 1;
    return writesInside.call(this, start, end);
  };
  t.teardown(() => {
    BatchWrites.prototype.writesInside = writesInside;
  });
  await db.doTransaction((tx) => tx.set(b('other/1'), b('x')));
  t.is(looks, 0, 'answered with the ranges not looked through');
  const cursors = countCursors(t, dir);
  t.deepEqual(await readEveryWay(db), [[], [], [], [], []]);
  t.is(looks, 1, 'one range, looked through at the first read');
  t.is(cursors.opened, 0, 'still known empty');
});
