// Synchronous reads on the embedded engine: the jobs layer's way to read an
// accept batch's queue page and records without a promise per read. Each
// must be the same read as the public one: read-your-writes, the same read
// conflicts (none for the snapshot range), the same errors, thrown.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type Database, FdbError, openDatabase, type Transaction } from '@jobtree/core';
import { getMany, getRangeKeysSnapshot } from '../../packages/core/src/storage/fast-paths.js';

const b = (text: string) => Buffer.from(text);

async function openTemp(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-synchronous-reads-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test('getMany answers at once with what get reads: stored values, the transaction\'s own writes, missing keys', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    tx.set(b('a'), b('stored-a'));
    tx.set(b('b'), b('stored-b'));
    tx.set(b('n'), Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]));
  });
  await db.doTransaction(async (tx) => {
    tx.set(b('a'), b('own-a'));
    tx.clear(b('b'));
    tx.atomicAdd(b('n'), 2);
    const keys = [b('a'), b('b'), b('n'), b('missing')];
    const read = getMany(tx, keys);
    t.true(Array.isArray(read));
    const expected = await Promise.all(keys.map((key) => tx.get(key)));
    t.deepEqual(read, expected);
    t.deepEqual(read, [b('own-a'), undefined, Buffer.from([3, 0, 0, 0, 0, 0, 0, 0]), undefined]);
  });
});

test('getRangeKeysSnapshot answers at once with the keys snapshot().getRange reads, own writes merged in', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (const key of ['r1', 'r2', 'r3', 'r4']) tx.set(b(key), b(`v-${key}`));
  });
  await db.doTransaction(async (tx) => {
    tx.clear(b('r2'));
    tx.set(b('r25'), b('own'));
    const keys = getRangeKeysSnapshot(tx, b('r'), b('s'), { limit: 3 });
    t.true(Array.isArray(keys));
    t.deepEqual(keys, (await tx.snapshot().getRange(b('r'), b('s'), { limit: 3 })).map((row) => row.key));
    t.deepEqual(
      (keys as Buffer[]).map((key) => key.toString()),
      ['r1', 'r25', 'r3'],
    );
  });
});

/**
 * Runs `read` in a transaction that then writes, with a concurrent commit
 * of `other` in between on its first attempt: how many attempts it took.
 */
async function attemptsAfterConcurrentWrite(db: Database, read: (tx: Transaction) => void, other: Buffer): Promise<number> {
  let attempts = 0;
  await db.doTransaction(async (tx) => {
    attempts += 1;
    read(tx);
    if (attempts === 1) await db.doTransaction((concurrent) => concurrent.set(other, b('changed')));
    tx.set(b('out'), b(String(attempts)));
  });
  return attempts;
}

test('getMany adds a read conflict on every key it reads; getRangeKeysSnapshot adds none', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    for (const key of ['k1', 'k2', 'k3']) tx.set(b(key), b('v'));
  });
  t.is(await attemptsAfterConcurrentWrite(db, (tx) => getMany(tx, [b('k1'), b('k2')]), b('k2')), 2);
  t.is(await attemptsAfterConcurrentWrite(db, (tx) => getMany(tx, [b('k1'), b('k2')]), b('k3')), 1);
  t.is(await attemptsAfterConcurrentWrite(db, (tx) => getRangeKeysSnapshot(tx, b('k'), b('l')), b('k2')), 1);
});

test('a value getMany returns is the caller\'s own: changing it changes neither the store nor a pending write', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => tx.set(b('stored'), b('value')));
  await db.doTransaction(async (tx) => {
    tx.set(b('pending'), b('value'));
    const [stored, pending] = getMany(tx, [b('stored'), b('pending')]) as Buffer[];
    stored?.fill(0x21);
    pending?.fill(0x21);
    t.deepEqual(await tx.get(b('stored')), b('value'));
    t.deepEqual(await tx.get(b('pending')), b('value'));
  });
  t.deepEqual(await db.doTransaction((tx) => tx.get(b('stored'))), b('value'));
});

test('synchronous reads throw at once what the public reads reject with', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => {
    tx.setVersionstampedKey(Buffer.concat([b('row/'), Buffer.alloc(10)]), 4, b('v'));
    const unreadable = t.throws(() => getMany(tx, [Buffer.concat([b('row/'), Buffer.alloc(10, 1)])]));
    t.true(FdbError.is(unreadable, 'accessed_unreadable'));
    const rangeUnreadable = t.throws(() => getRangeKeysSnapshot(tx, b('row/'), b('row0')));
    t.true(FdbError.is(rangeUnreadable, 'accessed_unreadable'));
    const system = t.throws(() => getMany(tx, [Buffer.from([0xff, 1])]));
    t.true(FdbError.is(system, 'key_outside_legal_range'));
  });
  let kept: Transaction | undefined;
  await db.doTransaction((tx) => {
    kept = tx;
  });
  const used = t.throws(() => getMany(kept as Transaction, [b('a')]));
  t.true(FdbError.is(used, 'client_invalid_operation'));
});

test('a wrapper that forwards everything but intercepts a read sees the reads that stand for it', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => tx.set(b('k'), b('v')));
  const seen: string[] = [];
  await db.doTransaction(async (tx) => {
    // A tracer as a Proxy: the internal methods are forwarded too (bound, as the public ones).
    const traced = new Proxy(tx, {
      get(target, property) {
        if (property === 'get') {
          return (key: Buffer) => {
            seen.push(`get ${key}`);
            return target.get(key);
          };
        }
        if (property === 'snapshot') {
          return () => {
            seen.push('snapshot');
            return target.snapshot();
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    t.deepEqual(await getMany(traced, [b('k')]), [b('v')]);
    t.deepEqual(
      (await getRangeKeysSnapshot(traced, b('a'), b('z'))).map((key) => key.toString()),
      ['k'],
    );
  });
  t.deepEqual(seen, ['get k', 'snapshot']);
});

test('on a transaction without the internal methods, synchronous reads return the public reads\' promises', async (t) => {
  const calls: string[] = [];
  const tx = {
    get: (key: Buffer) => {
      calls.push(`get ${key}`);
      return Promise.resolve(b(`value-${key}`));
    },
    snapshot: () => ({
      getRange: (start: Buffer, end: Buffer, options?: { limit?: number }) => {
        calls.push(`snapshot range ${start} ${end} ${options?.limit}`);
        return Promise.resolve([{ key: start, value: b('') }]);
      },
    }),
  } as unknown as Transaction;
  const values = getMany(tx, [b('a'), b('b')]);
  t.true(values instanceof Promise);
  t.deepEqual(await values, [b('value-a'), b('value-b')]);
  const keys = getRangeKeysSnapshot(tx, b('s'), b('t'), { limit: 5 });
  t.true(keys instanceof Promise);
  t.deepEqual(await keys, [b('s')]);
  t.deepEqual(calls, ['get a', 'get b', 'snapshot range s t 5']);
});
