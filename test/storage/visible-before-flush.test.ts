// With the default durability ('flush'), a transaction may ask to be told
// when its commit is readable (`onVisible`): lmdb has written it, and its
// sync may still be running. The commit itself still resolves only once it
// is on disk. The jobs layer uses this to hand a just-added job to a waiting
// worker without waiting for the add's sync (docs/durability.md).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { deferred } from '../deferred.js';
import { holdNextWrite } from './held-write.js';

const b = (text: string) => Buffer.from(text);

async function openFlush(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-visible-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test.serial('a commit that asked is told once it is readable, while its flush is held, and resolves only after the flush', async (t) => {
  t.timeout(20_000);
  const db = await openFlush(t);
  const held = holdNextWrite(t);
  const visible = deferred<undefined>();
  let resolved = false;
  const commit = db
    .doTransaction((tx) => {
      tx.set(b('early'), b('1'));
      tx.onVisible?.(() => visible.resolve(undefined));
    })
    .then(() => {
      resolved = true;
    });
  await visible.promise;
  t.deepEqual(await db.doTransaction((tx) => tx.get(b('early'))), b('1'), 'a transaction started now reads it');
  t.false(resolved, 'the commit is not acknowledged before its flush');
  held.release();
  await commit;
  t.true(resolved);
});

test.serial('a commit that did not ask stays unreadable until it is flushed', async (t) => {
  t.timeout(20_000);
  const db = await openFlush(t);
  // Past the first batch, so that a lone commit would be written in place: the hold needs the asynchronous write.
  await db.doTransaction((tx) => tx.set(b('first'), b('1')));
  const held = holdNextWrite(t);
  const visible = deferred<undefined>();
  const early = db.doTransaction((tx) => {
    tx.set(b('early'), b('1'));
    tx.onVisible?.(() => visible.resolve(undefined));
  });
  await visible.promise;
  held.release();
  await early;
  const held2 = holdNextWrite(t);
  let resolved = false;
  const plain = db.doTransaction((tx) => tx.set(b('plain'), b('1'))).then(() => {
    resolved = true;
  });
  // Several turns: a write written in place is already on disk here; an asynchronous one is held.
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  const seen = await db.doTransaction((tx) => tx.get(b('plain')));
  t.is(seen === undefined, !resolved, 'readable exactly when acknowledged');
  held2.release();
  await plain;
});

test.serial('a commit that fails is never told it is visible', async (t) => {
  const db = await openFlush(t);
  await db.doTransaction((tx) => tx.set(b('k'), b('0')));
  let told = 0;
  let attempts = 0;
  await db.doTransaction(async (tx) => {
    attempts += 1;
    await tx.get(b('k'));
    tx.onVisible?.(() => {
      told += 1;
    });
    // The first attempt loses a conflict with a commit that changed what it read.
    if (attempts === 1) await db.doTransaction((other) => other.set(b('k'), b('1')));
    tx.set(b('k'), b('2'));
  });
  t.is(attempts, 2);
  t.is(told, 1, 'only the attempt that committed');
});
