// The path of a lone job from add to its worker: an add on an idle write
// batcher starts its transaction at once, an accept reads the queue once,
// and an accept that finds a job arms no watch. Calls that come together
// still share transactions, and the single read still picks by rank.

import test from 'ava';
import { recording } from './recording-database.js';
import { nowSeconds, openTempJobs, T1 } from './temp-jobs.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('an add on an idle handle starts its transaction at once, not a turn of the event loop later', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await nextTurn();
  const before = rec.db.transactions;
  const added = jobs.add(T1, 'lone', { i: 1 });
  t.is(rec.db.transactions - before, 1, 'the transaction began inside the call');
  t.is(await added, 'pending');
});

test('callers whose calls settle together still share transactions when they call again', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await nextTurn();
  const before = rec.db.transactions;
  // 20 closed loops of 5 adds each: every round of calls comes back together.
  await Promise.all(
    Array.from({ length: 20 }, async (_, loop) => {
      for (let i = 0; i < 5; i++) t.is(await jobs.add(T1, `l${loop}-${i}`, { i }), 'pending');
    }),
  );
  const used = rec.db.transactions - before;
  t.true(used <= 25, `${used} transactions for 100 adds in 20 loops`);
  t.is(await jobs.pendingCount(T1), 100);
});

test('an accept of a lone job reads the queue once and arms no watch, even when it was ready to wait', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  await jobs.add(T1, 'only', { i: 1 });
  let { rangeReads, watches } = rec.db.calls;
  const taken = await jobs.acceptMany(T1, 500, { timeout: 60_000 });
  t.deepEqual(
    taken.map((job) => job.id),
    ['only'],
  );
  t.is(rec.db.calls.rangeReads - rangeReads, 1, 'one range read for a queue shorter than the read');
  t.is(rec.db.calls.watches - watches, 0, 'a request that got a job needs no watch');

  await jobs.addMany(
    T1,
    Array.from({ length: 100 }, (_, i) => ({ id: `j${i}` })),
  );
  ({ rangeReads, watches } = rec.db.calls);
  const one = await jobs.accept(T1, { timeout: 60_000 });
  t.truthy(one);
  t.is(rec.db.calls.rangeReads - rangeReads, 1, 'the front and its candidates in one read');
  t.is(rec.db.calls.watches - watches, 0);
});

test('an accept left without a job still arms its watch, and an add wakes it', async (t) => {
  const rec = recording();
  const { jobs } = await openTempJobs(t, rec.wrap);
  const { watches } = rec.db.calls;
  const waiting = jobs.acceptMany(T1, 10, { timeout: 60_000 });
  while (rec.db.calls.watches === watches) await new Promise((resolve) => setTimeout(resolve, 5));
  await jobs.add(T1, 'late', {});
  t.deepEqual(
    (await waiting).map((job) => job.id),
    ['late'],
  );
});

test('coalesced accepts: a request that would be left without a job gets the watch, the others do not wait', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'one', {});
  // Three blocked accepts in one batch, one job: the first gets it, the other two wait for the next add.
  const accepts = [0, 1, 2].map(() => jobs.accept(T1, { timeout: 60_000 }));
  const first = await Promise.race(accepts);
  t.is(first?.id, 'one');
  await jobs.addMany(T1, [{ id: 'two' }, { id: 'three' }]);
  const ids = (await Promise.all(accepts)).map((job) => job?.id).sort();
  t.deepEqual(ids, ['one', 'three', 'two']);
});

test('acceptMany takes by rank across priorities and scheduled times, passing over jobs not yet due', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = nowSeconds();
  const future = now + 3_600;
  // Not due: the highest priority, read first and passed over.
  await jobs.addMany(
    T1,
    Array.from({ length: 50 }, (_, i) => ({ id: `later${i}`, priority: 2, scheduledTime: future })),
  );
  const ranks = [now - 30, now - 20, now - 10];
  for (const [rank, time] of ranks.entries()) {
    await jobs.addMany(
      T1,
      Array.from({ length: rank === 2 ? 10 : 15 }, (_, i) => ({ id: `p1-${rank}-${i}`, priority: 1, scheduledTime: time })),
    );
  }
  await jobs.addMany(
    T1,
    Array.from({ length: 10 }, (_, i) => ({ id: `p0-${i}`, priority: 0, scheduledTime: now - 100 })),
  );
  const taken = await jobs.acceptMany(T1, 45);
  t.is(taken.length, 45);
  const ids = taken.map((job) => job.id);
  t.is(new Set(ids).size, 45, 'no job twice');
  // In rank order: all of priority 1, oldest scheduled time first, then 5 of priority 0.
  const rankOf = (id: string) => (id.startsWith('p0-') ? 3 : Number(id.split('-')[1]));
  const order = ids.map(rankOf);
  t.deepEqual(order, [...order].sort((a, b) => a - b));
  t.is(order.filter((rank) => rank < 3).length, 40);
  t.false(
    ids.some((id) => id.startsWith('later')),
    'no job that is not due',
  );
  t.is(await jobs.pendingCount(T1), 55);
  // noSchedule: any job of the best priority, due or not.
  const any = await jobs.acceptMany(T1, 60, { noSchedule: true });
  t.is(any.length, 55);
  t.deepEqual(
    any.slice(0, 50).map((job) => job.id.startsWith('later')),
    Array(50).fill(true),
  );
});
