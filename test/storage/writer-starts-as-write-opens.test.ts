// A store write made asynchronously (by lmdb's writer thread) is handed to
// that thread as its lmdb transaction opens, in the event turn that opens
// it, not once the turn has ended; and once per write. What the turn puts
// into it afterwards still goes in (see commit-pipeline.ts).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { countWriterStarts } from '../lmdb-writer-starts.js';

const b = (text: string) => Buffer.from(text);

test.serial('a store write reaches lmdb’s writer thread as it opens, once, with what the turn adds to it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-writer-starts-'));
  const store = new LmdbStore(dir);
  const base = store.snapshot(store.lastVersion()).retain();
  t.teardown(async () => {
    base.release();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const starts = countWriterStarts(dir);

  const write = store.write(1, () => ({ changes: [{ key: b('filled'), value: b('at the end of the turn') }], base }));
  t.is(starts.count, 1);
  store.writeEarly(() => ({ changes: [{ key: b('early'), value: b('as it joined') }], base }));
  await write.flushed;

  t.is(starts.count, 1);
  const after = store.snapshot(1).retain();
  t.deepEqual(after.get(b('early')), b('as it joined'));
  t.deepEqual(after.get(b('filled')), b('at the end of the turn'));
  after.release();
});
