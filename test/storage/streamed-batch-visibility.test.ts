// What a streamed batch (its transactions handed to lmdb's open write as
// they join) lets others see: a transaction reading in the same event turn
// as a streamed write, or any time before that write is durable, reads the
// value before it; and a transaction that loses its conflict check after
// others of the batch were streamed leaves nothing of itself in the store.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, FdbErrorCode, openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-streamed-visibility-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Two commits at once, so that the next batch takes lmdb's asynchronous (streamed) write, not the lone-commit path. */
async function warmUp(db: Database): Promise<void> {
  await Promise.all([db.doTransaction((tx) => tx.set(b('warm/1'), b('1'))), db.doTransaction((tx) => tx.set(b('warm/2'), b('1')))]);
}

/** Calls `after` right after each early write of a batch to lmdb, until the teardown. */
function afterEarlyWrites(t: { teardown(fn: () => void): void }, after: () => void): void {
  const writeEarly = LmdbStore.prototype.writeEarly;
  t.teardown(() => {
    LmdbStore.prototype.writeEarly = writeEarly;
  });
  LmdbStore.prototype.writeEarly = function (this: LmdbStore, produce) {
    writeEarly.call(this, produce);
    after();
  };
}

test.serial('a transaction reading right after a write was streamed to lmdb, in the same turn and until it is durable, reads the value before it', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  t.teardown(() => db.close());
  await db.doTransaction((tx) => tx.set(b('k'), b('before')));
  await warmUp(db);
  const reads: Array<Promise<string | undefined>> = [];
  let durable = false;
  afterEarlyWrites(t, () => {
    // Still in the turn the write was streamed in.
    if (!durable) reads.push(db.doTransaction(async (tx) => (await tx.get(b('k')))?.toString()));
  });
  const writes = [
    db.doTransaction((tx) => tx.set(b('k'), b('after'))).then(() => {
      durable = true;
    }),
    db.doTransaction((tx) => tx.set(b('other'), b('1'))),
  ];
  await Promise.all(writes);
  t.true(reads.length > 0, 'reads were made while the write was streamed');
  t.deepEqual(await Promise.all(reads), reads.map(() => 'before'));
  t.is((await db.doTransaction((tx) => tx.get(b('k'))))?.toString(), 'after');
});

test.serial('a transaction that loses its conflict check after others of its batch were streamed writes nothing', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  t.teardown(() => db.close());
  await db.doTransaction((tx) => {
    tx.set(b('balance'), b('10'));
  });
  await warmUp(db);
  const { promise: released, resolve: release } = deferred();
  const { promise: readDone, resolve: hasRead } = deferred();
  // Reads the balance, then (once the other commit was streamed) writes from it: a lost update if it committed.
  const loser = db.doTransaction(
    async (tx) => {
      const balance = Number((await tx.get(b('balance')))?.toString());
      hasRead();
      await released;
      tx.set(b('balance'), b(String(balance - 3)));
      tx.set(b('loser/ran'), b('1'));
      tx.clearRange(b('keep/'), b('keep0'));
      tx.atomicAdd(b('counter'), 1);
    },
    { retryLimit: 0 },
  );
  await readDone;
  await db.doTransaction((tx) => tx.set(b('keep/1'), b('1')));
  await warmUp(db);
  let streamed = 0;
  afterEarlyWrites(t, () => {
    streamed += 1;
    if (streamed === 1) release();
  });
  // The only commit of its batch: the first early write is the winner's, and the loser commits right after it.
  const winner = db.doTransaction(async (tx) => {
    const balance = Number((await tx.get(b('balance')))?.toString());
    tx.set(b('balance'), b(String(balance - 5)));
  });
  const lost = await t.throwsAsync(loser, { instanceOf: FdbError });
  t.is(lost?.code, FdbErrorCode.not_committed);
  await winner;
  const state = await db.doTransaction(async (tx) => ({
    balance: (await tx.get(b('balance')))?.toString(),
    ran: await tx.get(b('loser/ran')),
    keep: (await tx.getRange(b('keep/'), b('keep0'))).length,
    counter: await tx.get(b('counter')),
  }));
  t.deepEqual(state, { balance: '5', ran: undefined, keep: 1, counter: undefined });
});
