// A lone commit (one client committing at a time) of a few key changes is
// written in place, synchronously on the main thread; a lone bulk commit
// (hundreds of keys: a batch of finishes, an addMany, a prune) takes lmdb's
// asynchronous write, so that another client committing in turn with it (a
// drain beside a pruner) is not held for its whole sync.

import test from 'ava';
import type { Database } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { openTempDatabase } from './temp-database.js';

const b = (text: string) => Buffer.from(text);

/** Counts the store's writes made in place and asynchronously while the test runs. */
function countWrites(t: { teardown(fn: () => void): void }): { inPlace: number; async: number } {
  const counts = { inPlace: 0, async: 0 };
  const write = LmdbStore.prototype.write;
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
    LmdbStore.prototype.writeNow = writeNow;
  });
  LmdbStore.prototype.write = function (this: LmdbStore, ...args: Parameters<LmdbStore['write']>) {
    counts.async += 1;
    return write.apply(this, args);
  };
  LmdbStore.prototype.writeNow = function (this: LmdbStore, ...args: Parameters<LmdbStore['writeNow']>) {
    counts.inPlace += 1;
    return writeNow.apply(this, args);
  };
  return counts;
}

async function commitAlone(db: Database, keys: number, prefix: string): Promise<void> {
  await db.doTransaction((tx) => {
    for (let i = 0; i < keys; i++) tx.set(b(`${prefix}/${String(i).padStart(4, '0')}`), b('v'));
  });
}

test.serial('a lone commit of a few keys is written in place', async (t) => {
  const db = await openTempDatabase(t, 'lone-small');
  const counts = countWrites(t);
  await commitAlone(db, 1, 'one');
  await commitAlone(db, 20, 'twenty');
  t.deepEqual(counts, { inPlace: 2, async: 0 });
});

test.serial('a lone commit of hundreds of keys takes the asynchronous write, and the event loop runs while it syncs', async (t) => {
  const db = await openTempDatabase(t, 'lone-bulk');
  const counts = countWrites(t);
  let turns = 0;
  let counting = true;
  const tick = (): void => {
    turns += 1;
    if (counting) setImmediate(tick);
  };
  const committed = commitAlone(db, 500, 'bulk');
  setImmediate(tick);
  await committed;
  counting = false;
  t.deepEqual(counts, { inPlace: 0, async: 1 });
  // Written in place, the commit resolves within the turn that writes it,
  // before the loop reaches a turn of its own: 0 turns. Written by lmdb's
  // writer thread, its end reaches the loop in a later turn's poll phase,
  // after at least one turn. How many more depends only on the disk's speed.
  t.true(turns > 0, `event loop turns while the bulk commit was written: ${turns}`);
  const stored = await db.doTransaction((tx) => tx.getRange(b('bulk/'), b('bulk0')));
  t.is(stored.length, 500);
});

test.serial('range clears count toward a bulk commit', async (t) => {
  const db = await openTempDatabase(t, 'lone-clears');
  await commitAlone(db, 10, 'seed');
  const counts = countWrites(t);
  await db.doTransaction((tx) => {
    for (let i = 0; i < 10; i++) tx.clearRange(b(`seed/${String(i).padStart(4, '0')}`), b(`seed/${String(i).padStart(4, '0')}~`));
  });
  t.deepEqual(counts, { inPlace: 0, async: 1 });
  t.deepEqual(await db.doTransaction((tx) => tx.getRange(b('seed/'), b('seed0'))), []);
});
