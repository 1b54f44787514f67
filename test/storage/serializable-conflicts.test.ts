// Serializability of the embedded engine end to end, under the conflict
// log's shortcuts: transactions that read at the newest version skip the
// check, the key index is built only when a check needs it, batches kept for
// a slow reader are compacted at publish and others are forgotten at once.
// Lost updates and phantoms would show as counts lower than the commits.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function openTemp(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-serializable-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

function readInt(value: Buffer | undefined): number {
  return value === undefined ? 0 : Number(value.toString());
}

test('read-modify-write counters lose no update, among fast writers and slow readers that commit behind several batches', async (t) => {
  t.timeout(120_000);
  const db = await openTemp(t);
  const counters = ['c0', 'c1', 'c2'];
  let commits = 0;
  const fast = Array.from({ length: 12 }, async (_, worker) => {
    for (let i = 0; i < 40; i++) {
      const key = counters[(worker + i) % counters.length] as string;
      await db.doTransaction(async (tx) => {
        const value = readInt(await tx.get(b(key)));
        tx.set(b(key), b(String(value + 1)));
        // Unrelated writes: keep batches full of keys that are not read.
        tx.set(b(`noise/${worker}/${i}`), b('x'));
      });
      commits += 1;
    }
  });
  // Slow readers: read a counter, wait while batches commit, then write it.
  // Their read version stays in use, so the batches after it are kept and compacted.
  const slow = Array.from({ length: 3 }, async (_, worker) => {
    for (let i = 0; i < 4; i++) {
      const key = counters[worker] as string;
      await db.doTransaction(async (tx) => {
        const value = readInt(await tx.get(b(key)));
        await sleep(150);
        tx.set(b(key), b(String(value + 1)));
      });
      commits += 1;
    }
  });
  await Promise.all([...fast, ...slow]);
  const total = await db.doTransaction(async (tx) => {
    let sum = 0;
    for (const key of counters) sum += readInt(await tx.get(b(key)));
    return sum;
  });
  t.is(total, commits);
});

test('a range read sees every key another batch inserted into it: no two transactions claim the same slot', async (t) => {
  t.timeout(120_000);
  const db = await openTemp(t);
  let commits = 0;
  const workers = Array.from({ length: 10 }, async (_, worker) => {
    for (let i = 0; i < 25; i++) {
      await db.doTransaction(async (tx) => {
        // The next free slot is the number of slots taken: a phantom missed by the
        // conflict check would let two transactions write the same slot.
        const taken = await tx.getRange(b('slot/'), b('slot0'));
        if (worker % 3 === 0) await sleep(20);
        tx.set(b(`slot/${String(taken.length).padStart(6, '0')}`), b(`${worker}/${i}`));
      });
      commits += 1;
    }
  });
  await Promise.all(workers);
  const slots = await db.doTransaction((tx) => tx.getRange(b('slot/'), b('slot0')));
  t.is(slots.length, commits);
});

type Read = (tx: import('@jobtree/core').Transaction) => Promise<unknown>;
type Write = (tx: import('@jobtree/core').Transaction) => void;

const cases: Array<[string, Read, Write]> = [
  ['a point read, a set of that key', (tx) => tx.get(b('k/5')), (tx) => tx.set(b('k/5'), b('2'))],
  ['a point read, a clear of that key', (tx) => tx.get(b('k/5')), (tx) => tx.clear(b('k/5'))],
  ['a point read, a cleared range holding the key', (tx) => tx.get(b('k/5')), (tx) => tx.clearRange(b('k/'), b('k0'))],
  ['a point read, an atomic add', (tx) => tx.get(b('k/5')), (tx) => tx.atomicAdd(b('k/5'), 1)],
  ['a range read, a set inside it', (tx) => tx.getRange(b('k/'), b('k0')), (tx) => tx.set(b('k/55'), b('2'))],
  ['a range read, a cleared range overlapping it', (tx) => tx.getRange(b('k/3'), b('k/7')), (tx) => tx.clearRange(b('k/6'), b('k/9'))],
  ['a range read, a versionstamped key inside it', (tx) => tx.getRange(b('k/'), b('k0')), (tx) => tx.setVersionstampedKey(Buffer.concat([b('k/'), Buffer.alloc(10)]), 2, b('v'))],
  ['a read conflict key, a write conflict key', async (tx) => tx.addReadConflictKey(b('k/5')), (tx) => tx.addWriteConflictKey(b('k/5'))],
];

for (const [name, read, write] of cases) {
  for (const [where, before, after] of [
    ['first of several later batches', 0, 5],
    ['middle of several later batches', 3, 3],
    ['last of several later batches', 5, 0],
  ] as const) {
    test(`${name} conflict when the write is the ${where}, each published while the reader is open`, async (t) => {
      t.timeout(60_000);
      const db = await openTemp(t);
      await db.doTransaction((tx) => {
        for (let i = 0; i < 10; i++) tx.set(b(`k/${i}`), b('1'));
      });
      const { promise: gate, resolve: release } = deferred();
      const { promise: readTaken, resolve: readDone } = deferred();
      let attempts = 0;
      const reader = db.doTransaction(async (tx) => {
        attempts += 1;
        await read(tx);
        if (attempts === 1) {
          readDone();
          await gate;
        }
        tx.set(b('out'), b(String(attempts)));
      });
      await readTaken;
      // Each in a batch of its own, durable (published, and so compacted) before the next.
      for (let i = 0; i < before; i++) await db.doTransaction((tx) => tx.set(b(`other/${i}`), b('x')));
      await db.doTransaction((tx) => write(tx));
      for (let i = 0; i < after; i++) await db.doTransaction((tx) => tx.set(b(`other/after/${i}`), b('x')));
      release();
      await reader;
      t.is(attempts, 2, 'the first attempt must lose to the write');
    });
  }
}
