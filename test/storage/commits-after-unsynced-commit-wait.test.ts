// A commit read ahead of its sync (it asked `onVisible`) is the base of what
// commits after it: a transaction that read it, or any later commit (even a
// lone one, which would otherwise be written in place and synced at once),
// is acknowledged only after it, so no acknowledged commit can outlive a
// commit it came after.

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
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-after-unsynced-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test.serial('commits after a commit read ahead of its sync are acknowledged only after it', async (t) => {
  t.timeout(20_000);
  const db = await openFlush(t);
  await db.doTransaction((tx) => tx.set(b('k'), b('0')));
  const held = holdNextWrite(t);
  const visible = deferred();
  const order: string[] = [];
  const early = db
    .doTransaction((tx) => {
      tx.set(b('k'), b('1'));
      tx.onVisible?.(() => visible.resolve(undefined));
    })
    .then(() => order.push('early'));
  await visible.promise;
  const reader = db
    .doTransaction(async (tx) => {
      const seen = await tx.get(b('k'));
      tx.set(b('copy'), seen ?? b('none'));
    })
    .then(() => order.push('reader'));
  // Alone in its batch, after a batch of one: the in-place write, were it not for the commit still syncing.
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  const lone = db.doTransaction((tx) => tx.set(b('lone'), b('1'))).then(() => order.push('lone'));
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(order, [], 'nothing is acknowledged before the commit it came after');
  held.release();
  await Promise.all([early, reader, lone]);
  t.is(order[0], 'early');
  t.deepEqual(await db.doTransaction((tx) => tx.get(b('copy'))), b('1'), 'the reader read the commit ahead of its sync');
});
