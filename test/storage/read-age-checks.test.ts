// When the embedded engine's reads look at the clock for the 5-second
// transaction life: every public read, taking the read version and every
// commit read it; the engine's internal bulk read (`getMany`, an accept's
// hundreds of record reads in one synchronous call) reads it once per call.
// A read past the life fails with transaction_too_old (1007), wherever it
// runs (after an await, in a then-callback, in a nextTick callback).

import test from 'ava';
import { attempt, isTooOld, openOnFakeClock } from './fake-clock-database.js';
import { getMany } from '../../packages/core/src/storage/fast-paths.js';

const b = (s: string) => Buffer.from(s);
const LIFE_MS = 5_000;

test('a synchronous loop of reads fails as too old at the first read past the life', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
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
  t.is(firstFailure, LIFE_MS / 10 + 1);
  t.true(isTooOld(outcome) || outcome === undefined);
});

test('getMany reads the clock once for all its keys', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
  let clockReads = -1;
  await attempt(db, async (tx) => {
    await tx.get(b('first'));
    clock.reads = 0;
    const keys = Array.from({ length: 200 }, (_, i) => b(`k${i}`));
    const values = getMany(tx, keys);
    clockReads = clock.reads;
    t.true(Array.isArray(values));
    t.is((values as unknown[]).length, 200);
  });
  t.is(clockReads, 1);
});

test('getMany fails as too old when it is called past the life', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('first'));
    clock.now += LIFE_MS + 1;
    getMany(tx, [b('a'), b('b')]);
  });
  t.true(isTooOld(outcome), String(outcome));
});

test('a read after an await fails once the life has passed, though the clock moved in the turn of the previous read', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    clock.now += LIFE_MS + 1;
    await Promise.resolve();
    await tx.get(b('k'));
  });
  t.true(isTooOld(outcome), String(outcome));
});

test('a read in a later macrotask fails once the life has passed', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    clock.now += LIFE_MS + 1;
    await new Promise((resolve) => setImmediate(resolve));
    await tx.snapshot().get(b('k'));
  });
  t.true(isTooOld(outcome), String(outcome));
});

test('a read just within the life succeeds after an await', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    clock.now += LIFE_MS;
    await Promise.resolve();
    return (await tx.get(b('k'))) ?? 'absent';
  });
  t.is(outcome, 'absent');
});

test('a commit in the same turn as its reads checks the age on the clock read then', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age');
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
