// The embedded store's deferred durability: a commit is acknowledged (and
// readable) once lmdb has written it, before its flush; closing flushes; a
// flush that fails after its commit was acknowledged stops the store taking
// commits; and the option is the embedded store's only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, FdbErrorCode, openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { deferred } from '../deferred.js';
import { rollBackToLastFlush } from './last-flushed-snapshot.js';

const b = (text: string) => Buffer.from(text);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-deferred-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function openDeferred(t: { teardown(fn: () => void | Promise<void>): void }, dir: string): Promise<Database> {
  const db = await openDatabase({ path: dir, durability: 'deferred' });
  t.teardown(() => db.close());
  return db;
}

/**
 * Holds the `committed` and `flushed` promises of lmdb's next write until
 * `release()`, leaving its `visible` notice alone; `failFlush()` instead
 * rejects them, as lmdb-js does when the sync after the commit fails. A
 * lone commit written in place would return only once synced: deferred
 * durability must never take that path.
 */
function holdNextWrite(t: { teardown(fn: () => void): void }) {
  const gate = deferred<Error | undefined>();
  const write = LmdbStore.prototype.write;
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
    LmdbStore.prototype.writeNow = writeNow;
  });
  LmdbStore.prototype.writeNow = () => {
    throw new Error('a commit was written in place, synced before it returned');
  };
  let held = false;
  const settled = deferred();
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    const pending = write.call(this, version, fill);
    if (held) return pending;
    held = true;
    const hold = async <T>(value: T): Promise<T> => {
      const failure = await gate.promise;
      if (failure !== undefined) throw failure;
      return value;
    };
    // The visible notice races the write's own promise, as in the engine: it must not wait for the gate.
    if (pending.visible !== undefined) pending.visible = Promise.race([pending.visible, pending.committed.then(() => {})]);
    pending.committed = pending.committed.then(hold);
    pending.flushed = pending.flushed.then(hold);
    void Promise.allSettled([pending.committed, pending.flushed]).then(() => settled.resolve());
    return pending;
  };
  return {
    release: () => gate.resolve(undefined),
    failFlush: (error: Error) => gate.resolve(error),
    /** Resolves once the held write's promises have settled (after lmdb's own flush and the gate). */
    settled: settled.promise,
  };
}

test.serial('a commit resolves, and is readable, before lmdb reports its batch flushed', async (t) => {
  t.timeout(20_000);
  const db = await openDeferred(t, tempDir(t));
  const held = holdNextWrite(t);
  await Promise.all([0, 1, 2].map((i) => db.doTransaction((tx) => tx.set(b(`early/${i}`), b('1')))));
  const read = await db.doTransaction((tx) => tx.getRange(b('early/'), b('early0')));
  t.is(read.length, 3, 'a transaction started after the acknowledgement reads the batch');
  held.release();
});

test.serial("lmdb-js tells the engine when a write is visible, ahead of the write's own promise", async (t) => {
  // The acknowledgement ahead of the flush rests on lmdb-js internals (see
  // commit-visibility.ts): without the notice, commits would still resolve,
  // only once flushed. lmdb-js may skip a notice when the flush ends first,
  // never all of them on a disk whose sync takes any time.
  const db = await openDeferred(t, tempDir(t));
  const write = LmdbStore.prototype.write;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
  });
  let writes = 0;
  let noticed = 0;
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    const pending = write.call(this, version, fill);
    writes += 1;
    let visible = false;
    void pending.visible?.then(() => {
      visible = true;
    });
    void pending.committed.then(() => {
      if (visible) noticed += 1;
    });
    return pending;
  };
  for (let i = 0; i < 20; i++) await db.doTransaction((tx) => tx.set(b(`noticed/${i}`), b('1')));
  t.is(writes, 20);
  t.true(noticed > 0, `${noticed} of ${writes} writes were noticed visible before their promise resolved`);
});

test.serial('a flush that fails after its commit was acknowledged makes the store refuse new commits', async (t) => {
  t.timeout(20_000);
  const db = await openDeferred(t, tempDir(t));
  const held = holdNextWrite(t);
  await db.doTransaction((tx) => tx.set(b('acked'), b('1')));
  held.failFlush(new Error('the disk went away'));
  await held.settled;
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.set(b('after'), b('1'))), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.operation_failed);
  t.regex(error?.message ?? '', /flush/);
});

test('closing a store with deferred durability flushes: the last flushed snapshot holds every commit', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir, durability: 'deferred' });
  await Promise.all(Array.from({ length: 20 }, (_, i) => db.doTransaction((tx) => tx.set(b(`closed/${String(i).padStart(2, '0')}`), b('1')))));
  for (let i = 20; i < 30; i++) await db.doTransaction((tx) => tx.set(b(`closed/${i}`), b('1')));
  await db.close();
  // What an OS crash right after close would leave: lmdb's last flushed transaction (see embedded.test.ts).
  await rollBackToLastFlush(dir);
  const reopened = await openDatabase({ path: dir });
  t.teardown(() => reopened.close());
  const rows = await reopened.doTransaction((tx) => tx.getRange(b('closed/'), b('closed0')));
  t.is(rows.length, 30);
});

test('durability takes flush or deferred, and is refused with a cluster file', async (t) => {
  const dir = tempDir(t);
  for (const durability of ['sync', '', 1, null]) {
    const error = await t.throwsAsync(openDatabase({ path: dir, durability } as never), { instanceOf: FdbError });
    t.is(error?.code, FdbErrorCode.invalid_option_value, String(durability));
  }
  const error = await t.throwsAsync(openDatabase({ clusterFile: '/nonexistent/fdb.cluster', durability: 'deferred' } as never), {
    instanceOf: FdbError,
  });
  t.is(error?.code, FdbErrorCode.invalid_option_value);
  t.regex(error?.message ?? '', /FoundationDB/);
  const flush = await openDatabase({ path: dir, durability: 'flush' });
  await flush.close();
});
