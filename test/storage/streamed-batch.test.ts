// The embedded engine hands each transaction of a batch to lmdb as it joins
// the batch (while lmdb's transaction for the event turn is open), instead of
// building the whole batch at the end of the turn. These tests pin down that
// the result is the same as applying the batch's transactions in order:
// clears of keys an earlier member wrote, atomic adds across members,
// long keys sharing a bucket, versionstamped keys and values, and watches.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, openDatabase } from '@jobtree/core';
import type { Database, Transaction } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { versionOfStamp } from '../../packages/core/src/storage/versionstamp.js';

const b = (text: string) => Buffer.from(text);
/** Keys longer than the engine's 1,900-byte lmdb limit share a bucket when their first 1,900 bytes match. */
const long = (suffix: string) => Buffer.concat([Buffer.alloc(1_950, 0x61), b(suffix)]);
const le = (n: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64LE(BigInt(n));
  return bytes;
};

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-streamed-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Two commits at once, so that the next batch takes lmdb's asynchronous write (not the lone-commit path). */
async function warmUp(db: Database): Promise<void> {
  await Promise.all([db.doTransaction((tx) => tx.set(b('warm/1'), b('1'))), db.doTransaction((tx) => tx.set(b('warm/2'), b('1')))]);
}

/** Counts the transactions handed to lmdb while its write was open, until the teardown. */
function countEarlyWrites(t: { teardown(fn: () => void): void }): { count: number } {
  const writeEarly = LmdbStore.prototype.writeEarly;
  const seen = { count: 0 };
  t.teardown(() => {
    LmdbStore.prototype.writeEarly = writeEarly;
  });
  LmdbStore.prototype.writeEarly = function (this: LmdbStore, produce) {
    seen.count += 1;
    writeEarly.call(this, produce);
  };
  return seen;
}

/** Runs blind-writing bodies, all started in one event turn; resolves with each one's versionstamp. */
function inOneTurn(db: Database, bodies: Array<(tx: Transaction) => void>): Promise<Buffer[]> {
  return Promise.all(
    bodies.map(async (body) => {
      const { stamp } = await db.doTransaction((tx) => {
        body(tx);
        return { stamp: tx.getVersionstamp() };
      });
      return stamp;
    }),
  );
}

test.serial('transactions joining a batch whose lmdb write is open are written in order: clears, adds, long keys and stamps over earlier members', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  await db.doTransaction((tx) => {
    tx.set(b('k/0'), b('stored'));
    tx.set(long('0'), b('stored long'));
    tx.set(b('n'), le(100));
  });
  await warmUp(db);
  const early = countEarlyWrites(t);
  const stampTemplate = Buffer.concat([b('s/'), Buffer.alloc(10), b('/x')]);
  const stamps = await inOneTurn(db, [
    (tx) => {
      tx.set(b('k/1'), b('first'));
      tx.set(b('k/2'), b('first'));
      tx.set(long('1'), b('first long'));
      tx.atomicAdd(b('n'), 1);
      tx.setVersionstampedKey(stampTemplate, 2, b('stamped by the first'));
    },
    (tx) => {
      // Clears what the first member wrote in this batch and what was stored before it.
      tx.clearRange(b('k/'), b('k/2\xff'));
      tx.clear(long('0'));
      tx.set(long('2'), b('second long'));
      tx.atomicAdd(b('n'), 2);
      tx.setVersionstampedValue(b('v'), Buffer.concat([b('at:'), Buffer.alloc(10)]), 3);
    },
    (tx) => {
      tx.set(b('k/2'), b('third'));
      tx.atomicAdd(b('n'), 4);
      tx.clear(long('1'));
    },
  ]);
  const versions = new Set(stamps.map((stamp) => versionOfStamp(stamp)));
  t.is(versions.size, 1, 'one batch');
  t.true(early.count >= 3, `${early.count} early writes`);
  const state = await db.doTransaction(async (tx) => ({
    k: (await tx.getRange(b('k/'), b('k0'))).map((e) => `${e.key}=${e.value}`),
    n: (await tx.get(b('n')))?.readBigInt64LE(0),
    longs: (await tx.getRange(long(''), long('\xff'))).map((e) => `${e.key.subarray(1_950)}=${e.value}`),
    stamped: (await tx.getRange(b('s/'), b('s0'))).map((e) => ({ stamp: e.key.subarray(2, 12), value: e.value.toString() })),
    v: await tx.get(b('v')),
  }));
  t.deepEqual(state.k, ['k/2=third']);
  t.is(state.n, 107n);
  t.deepEqual(state.longs, ['2=second long']);
  t.deepEqual(state.stamped, [{ stamp: (stamps[0] as Buffer).subarray(0, 10), value: 'stamped by the first' }]);
  t.deepEqual(state.v, Buffer.concat([b('at:'), (stamps[1] as Buffer).subarray(0, 10)]));
  await db.close();
});

test.serial('a watch of a key a later member of the same batch writes fires once the batch is durable', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  await warmUp(db);
  const watch = await db.doTransaction(async (tx) => {
    await tx.get(b('watched'));
    return { watch: tx.watch(b('watched')) };
  });
  await inOneTurn(db, [
    (tx) => tx.set(b('other'), b('1')),
    (tx) => tx.set(b('watched'), b('changed')),
  ]);
  t.true(await watch.watch.promise);
  const watchCommitted = await db.doTransaction(async (tx) => {
    await tx.get(b('watched'));
    return { watch: tx.watch(b('watched')) };
  });
  // The same value written again by a member of a batch changes nothing.
  await inOneTurn(db, [(tx) => tx.set(b('other'), b('2')), (tx) => tx.set(b('watched'), b('changed'))]);
  const fired = await Promise.race([watchCommitted.watch.promise, new Promise((resolve) => setTimeout(() => resolve('quiet'), 200))]);
  t.is(fired, 'quiet');
  await db.close();
});

test.serial('a batch whose early lmdb write fails rejects every commit in it with commit_unknown_result (1021), and later commits go on', async (t) => {
  const db = await openDatabase({ path: tempDir(t) });
  await warmUp(db);
  const writeEarly = LmdbStore.prototype.writeEarly;
  t.teardown(() => {
    LmdbStore.prototype.writeEarly = writeEarly;
  });
  LmdbStore.prototype.writeEarly = function (this: LmdbStore) {
    LmdbStore.prototype.writeEarly = writeEarly;
    writeEarly.call(this, () => {
      throw new Error('injected failure while writing a batch early');
    });
  };
  const outcomes = await Promise.allSettled([
    db.doTransaction((tx) => tx.set(b('lost/1'), b('1')), { retryLimit: 0 }),
    db.doTransaction((tx) => tx.set(b('lost/2'), b('1')), { retryLimit: 0 }),
  ]);
  for (const outcome of outcomes) {
    t.is(outcome.status, 'rejected');
    if (outcome.status === 'rejected') t.true(FdbError.is(outcome.reason, 'commit_unknown_result'), String(outcome.reason));
  }
  await db.doTransaction((tx) => tx.set(b('after'), b('1')));
  t.deepEqual(await db.doTransaction((tx) => tx.get(b('after'))), b('1'));
  await db.close();
});
