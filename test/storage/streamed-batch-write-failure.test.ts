// A batch's transactions go to lmdb one by one as they join it (streamed).
// When writing the batch fails part way, every transaction in it gets
// commit_unknown_result (1021): each may or may not have committed, but none
// may be visible half applied, and a watch of a key that did change fires.
// These tests stream a transaction (short and long keys: a long key lives
// in a bucket shared with others), then make the early write of a later
// member of the batch fail, or fail part way through a transaction's keys.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';

const b = (text: string) => Buffer.from(text);
/** A key past the engine's 1,900-byte lmdb limit: it lives in a bucket. */
const long = (suffix: string) => Buffer.concat([Buffer.alloc(1_950, 0x6c), b(suffix)]);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-streamed-failure-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Two commits at once, so that the next batch takes lmdb's asynchronous (streamed) write, not the lone-commit path. */
async function warmUp(db: Database): Promise<void> {
  await Promise.all([db.doTransaction((tx) => tx.set(b('warm/1'), b('1'))), db.doTransaction((tx) => tx.set(b('warm/2'), b('1')))]);
}

/**
 * Makes the `failing`-th early write of the next batch fail once (as a put
 * lmdb refuses would): its changes are computed and then the write throws.
 * Counts the early writes seen.
 */
function failEarlyWrite(t: { teardown(fn: () => void): void }, failing: number): { calls: number; failed: boolean } {
  const writeEarly = LmdbStore.prototype.writeEarly;
  const state = { calls: 0, failed: false };
  t.teardown(() => {
    LmdbStore.prototype.writeEarly = writeEarly;
  });
  LmdbStore.prototype.writeEarly = function (this: LmdbStore, produce) {
    state.calls += 1;
    if (state.calls !== failing) {
      writeEarly.call(this, produce);
      return;
    }
    LmdbStore.prototype.writeEarly = writeEarly;
    writeEarly.call(this, () => {
      produce();
      state.failed = true;
      throw new Error('injected: lmdb refused a put of this batch');
    });
  };
  return state;
}

test.serial(
  'a streamed transaction that wrote a short and a long key is never visible half applied when a later member of its batch fails to write',
  async (t) => {
    const db = await openDatabase({ path: tempDir(t) });
    t.teardown(() => db.close());
    await warmUp(db);
    const injected = failEarlyWrite(t, 2);
    // Both start in one event turn: the first is streamed as its batch's
    // write starts, the second joins the open write and fails.
    const outcomes = await Promise.allSettled([
      db.doTransaction(
        (tx) => {
          tx.set(b('pair/short'), b('written'));
          tx.set(long('pair'), b('written'));
        },
        { retryLimit: 0 },
      ),
      db.doTransaction((tx) => tx.set(b('second'), b('written')), { retryLimit: 0 }),
    ]);
    t.true(injected.failed, `the injected failure ran (${injected.calls} early writes)`);
    for (const outcome of outcomes) {
      t.is(outcome.status, 'rejected');
      if (outcome.status === 'rejected') t.true(FdbError.is(outcome.reason, 'commit_unknown_result'), String(outcome.reason));
    }
    const seen = await db.doTransaction(async (tx) => ({
      short: (await tx.get(b('pair/short')))?.toString(),
      long: (await tx.get(long('pair')))?.toString(),
    }));
    // One transaction: both of its keys, or neither.
    t.is(seen.short, seen.long, `short key ${seen.short ?? 'absent'}, long key ${seen.long ?? 'absent'}`);
  },
);

test.serial(
  'a streamed transaction that cleared a long key and set a short one is never visible half applied when a later member fails to write',
  async (t) => {
    const db = await openDatabase({ path: tempDir(t) });
    t.teardown(() => db.close());
    await db.doTransaction((tx) => {
      tx.set(long('moved'), b('here'));
    });
    await warmUp(db);
    const injected = failEarlyWrite(t, 2);
    // Moves a value from a long key to a short one: after it, exactly one of them holds it.
    const outcomes = await Promise.allSettled([
      db.doTransaction(
        (tx) => {
          tx.clear(long('moved'));
          tx.set(b('moved/short'), b('here'));
        },
        { retryLimit: 0 },
      ),
      db.doTransaction((tx) => tx.set(b('second'), b('written')), { retryLimit: 0 }),
    ]);
    t.true(injected.failed, `the injected failure ran (${injected.calls} early writes)`);
    t.true(outcomes.every((outcome) => outcome.status === 'rejected'));
    const seen = await db.doTransaction(async (tx) => ({
      short: (await tx.get(b('moved/short')))?.toString(),
      long: (await tx.get(long('moved')))?.toString(),
    }));
    t.true(
      (seen.short === 'here') !== (seen.long === 'here'),
      `the value is in exactly one place: short key ${seen.short ?? 'absent'}, long key ${seen.long ?? 'absent'}`,
    );
  },
);

test.serial(
  'a watched key that a streamed transaction changed fires its watch, even though a later member of the batch failed to write',
  async (t) => {
    const db = await openDatabase({ path: tempDir(t) });
    t.teardown(() => db.close());
    await db.doTransaction((tx) => tx.set(b('watched'), b('old')));
    const armed = await db.doTransaction(async (tx) => {
      await tx.get(b('watched'));
      return { watch: tx.watch(b('watched')) };
    });
    await warmUp(db);
    const injected = failEarlyWrite(t, 2);
    await Promise.allSettled([
      db.doTransaction((tx) => tx.set(b('watched'), b('new')), { retryLimit: 0 }),
      db.doTransaction((tx) => tx.set(b('second'), b('written')), { retryLimit: 0 }),
    ]);
    t.true(injected.failed, `the injected failure ran (${injected.calls} early writes)`);
    const now = (await db.doTransaction((tx) => tx.get(b('watched'))))?.toString();
    // A later durable batch: every watch its predecessors should fire has fired by then.
    await db.doTransaction((tx) => tx.set(b('later'), b('1')));
    const fired = await Promise.race([armed.watch.promise.then(() => 'fired'), new Promise((resolve) => setImmediate(() => resolve('not fired')))]);
    if (now === 'new') t.is(fired, 'fired', 'the key reads the new value, so its watch must have fired');
    else t.is(now, 'old');
  },
);

/**
 * Makes the second early write of the next batch fail after the first key
 * change it hands to lmdb, as a put lmdb refuses part way through a
 * transaction's keys would.
 */
function failMidEarlyWrite(t: { teardown(fn: () => void): void }): { failed: boolean } {
  const writeEarly = LmdbStore.prototype.writeEarly;
  const state = { calls: 0, failed: false };
  t.teardown(() => {
    LmdbStore.prototype.writeEarly = writeEarly;
  });
  LmdbStore.prototype.writeEarly = function (this: LmdbStore, produce) {
    state.calls += 1;
    if (state.calls !== 2) {
      writeEarly.call(this, produce);
      return;
    }
    LmdbStore.prototype.writeEarly = writeEarly;
    writeEarly.call(this, () => {
      const contents = produce();
      const [first] = [...contents.changes];
      function* refusingAfterFirst() {
        if (first !== undefined) yield first;
        state.failed = true;
        throw new Error('injected: lmdb refused a put');
      }
      return { changes: refusingAfterFirst(), base: contents.base };
    });
  };
  return state;
}

test.serial(
  'a transaction whose early write fails after lmdb took its first key is not visible half applied',
  async (t) => {
    const db = await openDatabase({ path: tempDir(t) });
    t.teardown(() => db.close());
    await warmUp(db);
    const refused = failMidEarlyWrite(t);
    const outcomes = await Promise.allSettled([
      db.doTransaction((tx) => tx.set(b('first'), b('written')), { retryLimit: 0 }),
      db.doTransaction(
        (tx) => {
          tx.set(b('pair/1'), b('written'));
          tx.set(b('pair/2'), b('written'));
        },
        { retryLimit: 0 },
      ),
    ]);
    t.true(refused.failed, 'the injected failure ran');
    const second = outcomes[1];
    t.is(second?.status, 'rejected');
    if (second?.status === 'rejected') t.true(FdbError.is(second.reason, 'commit_unknown_result'), String(second.reason));
    const seen = await db.doTransaction(async (tx) => ({
      one: (await tx.get(b('pair/1')))?.toString(),
      two: (await tx.get(b('pair/2')))?.toString(),
    }));
    t.is(seen.one, seen.two, `pair/1 ${seen.one ?? 'absent'}, pair/2 ${seen.two ?? 'absent'}`);
  },
);
