// A parked accept served by a write picks as its own accept would: the best
// due job (higher priority first, then the older scheduled time, a job that
// became due while the accept waited included), and at random among the
// front jobs of equal rank (so that accepts of several processes rarely
// collide on the same job), not always the first key.

import test from 'ava';
import { nowSeconds, T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

const ROUNDS = 12;
const EQUALS = 8;

test('the best due job is handed over: higher priority first, then the older scheduled time', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  let watches = db.calls.watches;
  let accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const now = nowSeconds();
  await jobs.addMany(T1, [{ id: 'new' }, { id: 'old', scheduledTime: now - 100 }, { id: 'high', priority: 3 }]);
  t.is((await accepting)?.id, 'high');

  await jobs.remove(T1, 'new');
  await jobs.remove(T1, 'old');
  watches = db.calls.watches;
  accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  await jobs.addMany(T1, [{ id: 'newer', scheduledTime: now }, { id: 'older', scheduledTime: now - 100 }]);
  t.is((await accepting)?.id, 'older');
  t.is(await jobs.getJobState(T1, 'newer'), 'pending');
});

test('among jobs of equal rank, the job handed over is picked at random', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const scheduledTime = nowSeconds() - 10;
  const picked = new Set<number>();
  for (let round = 0; round < ROUNDS; round++) {
    const watches = db.calls.watches;
    const accepting = jobs.accept(T1, { timeout: 60_000 });
    await parked(watches);
    const ids = Array.from({ length: EQUALS }, (_, i) => `r${round}-${i}`);
    await jobs.addMany(
      T1,
      ids.map((id) => ({ id, scheduledTime })),
    );
    const job = (await accepting)!;
    picked.add(ids.indexOf(job.id));
    await jobs.finish(job);
    for (const id of ids) await jobs.remove(T1, id);
  }
  // All the same in 12 rounds of 8 equal jobs: about one chance in 10^10 at random.
  t.true(picked.size > 1, `always job #${[...picked].join()} of ${EQUALS}`);
});

test('a job that became due while the accept waited goes before the job the add brings', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  // Due in 300 ms: the accept parks with a timer for it.
  const dueAt = Date.now() / 1000 + 0.3;
  await jobs.add(T1, 'became-due', {}, { scheduledTime: dueAt });
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  // Past its scheduled time before the accept's timer can run.
  while (Date.now() / 1000 < dueAt + 0.05);
  // Scheduled now, after the other (an add's default, the whole second, could sort before it).
  const adding = jobs.add(T1, 'brought', {}, { scheduledTime: Date.now() / 1000 });
  t.is((await accepting)?.id, 'became-due', 'the older due job first, whichever path served the accept');
  t.is(await adding, 'pending');
  t.is(await jobs.getJobState(T1, 'brought'), 'pending');
});
