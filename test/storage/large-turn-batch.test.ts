// lmdb-js starts its writer thread on an event turn's transaction part way
// through the turn, once 1,000 writes are queued, and the writer then waits
// for the turn's further writes. These tests pin down that a turn with more
// writes than that is still one batch, written as one lmdb transaction:
// every commit in it gets the same version, all of it is readable once the
// commits resolve, and all of it is there after the store is reopened.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { versionOfStamp } from '../../packages/core/src/storage/versionstamp.js';

const TRANSACTIONS = 40;
const KEYS_PER_TRANSACTION = 60;

const keyOf = (transaction: number, n: number) => Buffer.from(`large-turn/${transaction}/${n}`);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-large-turn-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Two commits at once, so that the next batch takes lmdb's asynchronous write (not the lone-commit path). */
async function warmUp(db: Database): Promise<void> {
  await Promise.all([
    db.doTransaction((tx) => tx.set(Buffer.from('warm/1'), Buffer.from('1'))),
    db.doTransaction((tx) => tx.set(Buffer.from('warm/2'), Buffer.from('1'))),
  ]);
}

/** Commits TRANSACTIONS transactions in one event turn, 2,400 writes in all; resolves with each one's commit version. */
async function commitOneTurn(db: Database): Promise<number[]> {
  const stamps = await Promise.all(
    Array.from({ length: TRANSACTIONS }, (_, transaction) =>
      db.doTransaction((tx) => {
        for (let n = 0; n < KEYS_PER_TRANSACTION; n++) tx.set(keyOf(transaction, n), Buffer.from(`${transaction}:${n}`));
        return { stamp: tx.getVersionstamp() };
      }),
    ),
  );
  return Promise.all(stamps.map(async ({ stamp }) => versionOfStamp(await stamp)));
}

async function missingKeys(db: Database): Promise<number> {
  return db.doTransaction(async (tx) => {
    let missing = 0;
    for (let transaction = 0; transaction < TRANSACTIONS; transaction++) {
      for (let n = 0; n < KEYS_PER_TRANSACTION; n++) {
        const value = await tx.get(keyOf(transaction, n));
        if (value?.toString() !== `${transaction}:${n}`) missing++;
      }
    }
    return missing;
  });
}

test('a turn of more than 1,000 writes is one batch: every commit in it has the same version and all of it reads back', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  try {
    await warmUp(db);
    const versions = await commitOneTurn(db);
    t.is(new Set(versions).size, 1, `commit versions ${[...new Set(versions)].join(', ')}`);
    t.is(await missingKeys(db), 0);
  } finally {
    await db.close();
  }
});

test('a turn of more than 1,000 writes is all there after the store is reopened', async (t) => {
  const path = tempDir(t);
  const db = await openDatabase({ path });
  try {
    await warmUp(db);
    await commitOneTurn(db);
  } finally {
    await db.close();
  }
  const reopened = await openDatabase({ path });
  try {
    t.is(await missingKeys(reopened), 0);
  } finally {
    await reopened.close();
  }
});
