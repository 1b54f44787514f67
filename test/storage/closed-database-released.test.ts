// Closing an embedded database lets go of everything lmdb-js kept for it.
// lmdb-js records every store it opens in a process-wide registry (keyed by
// the directory's base name) and never removes one on close: without help,
// each database opened and closed in a process (an app per test, a service
// that restarts its app) stays reachable for good, with its buffers.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import test from 'ava';
import * as lmdb from 'lmdb';
import { openDatabase } from '@jobtree/core';

/** lmdb-js's registry of opened stores: exported at runtime, absent from its types. */
const openedStores = (lmdb as unknown as { allDbs: Map<string, unknown> }).allDbs;

function storesOf(dir: string): string[] {
  const name = basename(dir);
  return [...openedStores.keys()].filter((key) => key === name || key.startsWith(`${name}-`));
}

test('a closed database leaves none of its stores in lmdb-js\'s registry', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-released-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = await openDatabase({ path: dir });
  await db.doTransaction((tr) => tr.set(Buffer.from('k'), Buffer.from('v')));
  t.true(storesOf(dir).length > 0, 'the registry is where the open stores are found');
  await db.close();
  t.deepEqual(storesOf(dir), []);
});

test('closing a database leaves the stores of another one open in the registry', async (t) => {
  const keptDir = mkdtempSync(join(tmpdir(), 'jobtree-released-kept-'));
  const closedDir = mkdtempSync(join(tmpdir(), 'jobtree-released-closed-'));
  t.teardown(() => {
    rmSync(keptDir, { recursive: true, force: true });
    rmSync(closedDir, { recursive: true, force: true });
  });
  const kept = await openDatabase({ path: keptDir });
  t.teardown(() => kept.close());
  const closed = await openDatabase({ path: closedDir });
  const before = storesOf(keptDir);
  await closed.close();
  t.deepEqual(storesOf(keptDir), before);
  t.deepEqual(storesOf(closedDir), []);
  t.is(await kept.doTransaction((tr) => tr.get(Buffer.from('missing'))), undefined);
});
