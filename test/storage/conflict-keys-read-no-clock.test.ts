// A read conflict key (or range) fixes a transaction's read version but
// reads nothing, so adding one does not read the clock: an accept adds one
// per job it takes. The transaction's 5-second life is still enforced, by
// its reads and by its commit.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError } from '@jobtree/core';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';

const b = (text: string) => Buffer.from(text);

function openCounting(t: import('ava').ExecutionContext): { db: EmbeddedDatabase; clock: { now: number; reads: number } } {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-conflict-clock-'));
  const clock = { now: 1_000_000, reads: 0 };
  const db = EmbeddedDatabase.open({
    path: dir,
    now: () => {
      clock.reads += 1;
      return clock.now;
    },
  });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db, clock };
}

/** Clock reads of one transaction that adds `keys` read conflict keys and `ranges` ranges, then writes a key. */
async function clockReadsOf(db: EmbeddedDatabase, clock: { reads: number }, keys: number, ranges: number): Promise<number> {
  let reads = 0;
  await db.doTransaction((tx) => {
    const before = clock.reads;
    for (let i = 0; i < keys; i++) tx.addReadConflictKey(b(`key-${i}`));
    for (let i = 0; i < ranges; i++) tx.addReadConflictRange(b(`range-${i}`), b(`range-${i}~`));
    reads = clock.reads - before;
    tx.set(b('written'), b('x'));
  });
  return reads;
}

test('adding read conflict keys and ranges reads the clock no more for many than for one', async (t) => {
  const { db, clock } = openCounting(t);
  const one = await clockReadsOf(db, clock, 1, 1);
  const many = await clockReadsOf(db, clock, 200, 50);
  t.is(many, one);
});

test('a transaction whose read version a conflict key fixed still fails at commit once 5 s old', async (t) => {
  const { db, clock } = openCounting(t);
  await t.throwsAsync(
    db.doTransaction(
      (tx) => {
        tx.addReadConflictKey(b('guard'));
        clock.now += 5_001;
        tx.addReadConflictKey(b('late'));
        tx.set(b('k'), b('v'));
      },
      { retryLimit: 0 },
    ),
    { instanceOf: FdbError, message: /transaction_too_old \(1007\)/ },
  );
});
