// An add that hands its job to a parked accept is written asynchronously
// by lmdb's writer thread (so that the accept gets the job once the write is
// visible, ahead of its sync). The writer thread starts on the transaction
// in the add's own event turn, as the transaction opens, not once the turn
// has ended: on an idle machine its wake-up then overlaps the rest of the
// turn. Counted in calls that hand lmdb-js's transaction to its writer
// thread (`startWriting` on its native environment).

import test from 'ava';
import { countWriterStarts } from '../../lmdb-writer-starts.js';
import { T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

test.serial('an add that serves a parked accept starts lmdb’s writer thread before its event turn ends, once', async (t) => {
  const { jobs, db, dir, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const accepting = jobs.accept(T1, { timeout: 60_000 });
  await parked(watches);
  const starts = countWriterStarts(dir);

  const adding = jobs.add(T1, 'j', { n: 1 });
  // Queued before the add commits, so it runs before lmdb-js's own task that ends the turn's transaction.
  const startsInTurn = await new Promise<number>((resolve) => setImmediate(() => resolve(starts.count)));
  const job = await accepting;
  await adding;

  t.is(job?.id, 'j');
  t.is(startsInTurn, 1);
  t.is(starts.count, 1);
});
