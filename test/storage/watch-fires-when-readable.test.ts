// A watch resolves once a commit leaves a value different from the one its
// transaction saw. With the default durability that is when the commit is
// durable, except for a commit that asked to be told when it is readable
// (`onVisible`: an add handing its job to a waiting accept), which is read
// ahead of its sync: a watch armed against it fires once it is readable,
// as the readers that see it do. Only an OS crash can undo such a commit,
// and it ends every watcher with it (docs/durability.md).

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
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-watch-durable-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test.serial('a watch armed while a commit is readable but not yet durable fires then, before the commit resolves', async (t) => {
  t.timeout(20_000);
  const db = await openFlush(t);
  await db.doTransaction((tx) => tx.set(b('k'), b('0')));
  // A reader that saw the value before the commit, and arms its watch after the commit is readable.
  let armWatch!: () => void;
  const armed = new Promise<void>((resolve) => {
    armWatch = resolve;
  });
  const readerSaw = deferred();
  const watching = db.doTransaction(async (tx) => {
    await tx.get(b('k'));
    readerSaw.resolve(undefined);
    await armed;
    return tx.watch(b('k'));
  });
  await readerSaw.promise;
  const held = holdNextWrite(t);
  const visible = deferred();
  let durable = false;
  const commit = db
    .doTransaction((tx) => {
      tx.set(b('k'), b('1'));
      tx.onVisible?.(() => visible.resolve(undefined));
    })
    .then(() => {
      durable = true;
    });
  await visible.promise;
  armWatch();
  const watch = await watching;
  t.true(await watch.promise);
  t.false(durable, 'the watch fired while the commit waited for its sync');
  held.release();
  await commit;
  t.true(durable);
});
