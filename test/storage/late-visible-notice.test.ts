// lmdb-js delivers a write's "visible" progress notice and the end of its
// write on two different queues, so the notice can come after the write has
// already been reported failed (a sync that failed after the transaction
// was written). A batch that was failed by then must ignore the late
// notice: it must not take the pipeline's write slot from the batch being
// written next.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);

async function openStore(t: { teardown(fn: () => void | Promise<void>): void }, durability: 'flush' | 'deferred'): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-late-visible-'));
  const db = await openDatabase({ path: dir, durability });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

for (const durability of ['flush', 'deferred'] as const) {
  test.serial(`a visible notice that comes after its write failed is ignored (${durability})`, async (t) => {
    t.timeout(20_000);
    const db = await openStore(t, durability);
    await db.doTransaction((tx) => tx.set(b('first'), b('1')));
    const late = deferred();
    const write = LmdbStore.prototype.write;
    t.teardown(() => {
      LmdbStore.prototype.write = write;
    });
    LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
      LmdbStore.prototype.write = write;
      const pending = write.call(this, version, fill);
      // lmdb reports the write failed, then (later) that it was visible.
      const failure = new Error('the sync failed');
      pending.committed = pending.committed.then(() => Promise.reject(failure));
      pending.flushed = pending.flushed.then(() => Promise.reject(failure));
      pending.visible = late.promise.then(() => {});
      return pending;
    };
    const failed = db.doTransaction(
      (tx) => {
        tx.set(b('k'), b('1'));
        tx.onVisible?.(() => {});
      },
      { retryLimit: 0 },
    );
    await t.throwsAsync(failed);
    // The next batch is being written when the late notice comes.
    const next = db.doTransaction((tx) => tx.set(b('next'), b('1')));
    late.resolve(undefined);
    await next;
    const later = await Promise.all([1, 2, 3].map((i) => db.doTransaction((tx) => tx.set(b(`later${i}`), b('1')))));
    t.is(later.length, 3);
    t.deepEqual(await db.doTransaction((tx) => tx.get(b('next'))), b('1'));
  });
}
