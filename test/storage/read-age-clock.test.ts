// When the embedded engine's reads look at the clock for the 5-second
// transaction life: once per turn of synchronous code (and every
// CLOCK_REUSES reads within one), while taking the read version and
// committing always read it. A read after an await, or far enough into a
// synchronous loop of reads, still fails with transaction_too_old (1007).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, FdbErrorCode, type Transaction } from '@jobtree/core';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';
import { CLOCK_REUSES } from '../../packages/core/src/storage/embedded/turn-clock.js';

const b = (s: string) => Buffer.from(s);
const LIFE_MS = 5_000;

/** A database on a fake clock that counts how often it is read. */
function openOnFakeClock(t: { teardown(fn: () => void | Promise<void>): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-read-age-'));
  const clock = { now: 1_000_000, reads: 0 };
  const db = EmbeddedDatabase.open({
    path: dir,
    now: () => {
      clock.reads++;
      return clock.now;
    },
  });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db, clock };
}

function isTooOld(error: unknown): boolean {
  return error instanceof FdbError && error.code === FdbErrorCode.transaction_too_old;
}

/** Runs `body` once (no retry) and returns what it returned or the error the attempt failed with. */
async function attempt<T>(db: EmbeddedDatabase, body: (tx: Transaction) => Promise<T> | T): Promise<T | unknown> {
  try {
    return await db.doTransaction(body, { retryLimit: 0 });
  } catch (error) {
    return error;
  }
}

test('a synchronous loop of reads fails as too old within CLOCK_REUSES reads of passing the life', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  let firstFailure = -1;
  let reads = 0;
  const outcome = await attempt(db, async (tx) => {
    const results: Array<Promise<Buffer | undefined>> = [];
    // 10 ms per read: the life is over from read 501 on, and every read is made in this one turn.
    for (let i = 0; i < 2_000; i++) {
      results.push(tx.get(b(`k${i}`)));
      clock.now += 10;
    }
    reads = results.length;
    const settled = await Promise.allSettled(results);
    firstFailure = settled.findIndex((result) => result.status === 'rejected' && isTooOld(result.reason));
  });
  t.is(reads, 2_000);
  const lifeOverAt = LIFE_MS / 10 + 1;
  t.true(firstFailure >= lifeOverAt, `read ${firstFailure} failed before the life was over`);
  t.true(firstFailure <= lifeOverAt + CLOCK_REUSES, `read ${firstFailure} was the first to fail`);
  t.true(isTooOld(outcome) || outcome === undefined);
});

test('a synchronous stretch of reads reads the clock once per CLOCK_REUSES reads', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  let clockReads = -1;
  await attempt(db, (tx) => {
    clock.reads = 0;
    for (let i = 0; i < 200; i++) void tx.get(b(`k${i}`));
    clockReads = clock.reads;
  });
  t.true(clockReads >= 1, 'taking the read version reads the clock');
  t.true(clockReads <= 1 + Math.floor(200 / CLOCK_REUSES), `${clockReads} clock reads for 200 reads`);
});

test('a read after an await fails once the life has passed, though the clock moved in the turn of the previous read', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    // The same turn as the read above: its clock reading must not be reused after the await.
    clock.now += LIFE_MS + 1;
    await Promise.resolve();
    await tx.get(b('k'));
  });
  t.true(isTooOld(outcome), String(outcome));
});

test('a read in a later macrotask fails once the life has passed', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    clock.now += LIFE_MS + 1;
    await new Promise((resolve) => setImmediate(resolve));
    await tx.snapshot().get(b('k'));
  });
  t.true(isTooOld(outcome), String(outcome));
});

test('a read just within the life succeeds after an await', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    clock.now += LIFE_MS;
    await Promise.resolve();
    return (await tx.get(b('k'))) ?? 'absent';
  });
  t.is(outcome, 'absent');
});

test('a commit in the same turn as its reads checks the age on the clock read then', async (t) => {
  const { db, clock } = openOnFakeClock(t);
  const outcome = await attempt(db, (tx) => {
    // Read and write without awaiting: the commit may come in this very turn.
    void tx.get(b('k'));
    void tx.get(b('j'));
    tx.set(b('k'), b('late'));
    clock.now += LIFE_MS + 1;
  });
  t.true(isTooOld(outcome), String(outcome));
  t.is(await db.doTransaction((tx) => tx.get(b('k'))), undefined);
});
