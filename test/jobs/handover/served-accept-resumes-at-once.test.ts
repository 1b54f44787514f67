// An accept that a write served gets its jobs as soon as the write's commit
// is readable: its caller resumes a few promise reactions after the store's
// notice, with nothing else to wait for (no later tick, no turn of the
// event loop). That is the whole of an idle worker's wait between the
// commit and its handler, so every hop counts.
//
// Counted in microtasks: a chain of promise reactions started with the
// notice runs beside the accept's own until the caller has its job. A wait
// for a tick (process.nextTick) or a later turn would let the chain run to
// its cap first, since neither comes while microtasks are queued.

import { getEventListeners } from 'node:events';
import test from 'ava';
import { LmdbStore } from '../../../packages/core/src/storage/embedded/lmdb-store.js';
import { T1 } from '../temp-jobs.js';
import { openHandoverJobs } from './handover-setup.js';

/** Where the counting chain stops whatever happens. */
const CHAIN_CAP = 1_000;
/** Promise reactions from the notice to the caller: the store's, the accept's and its wait's, and a few to spare. */
const MOST_REACTIONS = 20;

test.serial("a served accept's caller resumes within a few microtasks of the commit becoming readable", async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  let accepted = false;
  const accepting = jobs.acceptMany(T1, 1, { timeout: 60_000 }).then((taken) => {
    accepted = true;
    return taken;
  });
  await parked(watches);

  let reactions: number | undefined;
  let chainStarted = false;
  const startChain = (): void => {
    if (chainStarted) return;
    chainStarted = true;
    let hops = 0;
    const step = (): void => {
      if (accepted || hops >= CHAIN_CAP) {
        reactions = hops;
        return;
      }
      hops += 1;
      void Promise.resolve().then(step);
    };
    step();
  };
  const write = LmdbStore.prototype.write;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
  });
  LmdbStore.prototype.write = function (this: LmdbStore, ...args: Parameters<LmdbStore['write']>) {
    const started = write.apply(this, args);
    // Registered before the store's own callbacks, on the notice and on the
    // commit (lmdb-js may skip the notice when the sync ends first): the
    // chain starts first, with whichever comes first.
    started.visible?.then(startChain);
    started.committed.then(startChain, () => {});
    return started;
  };

  await jobs.add(T1, 'j1', { n: 1 });
  const [job] = await accepting;
  t.is(job?.id, 'j1');
  t.not(reactions, undefined, 'the write that served the accept told when it was readable');
  t.true((reactions ?? CHAIN_CAP) <= MOST_REACTIONS, `promise reactions between the readable notice and the caller: ${reactions}`);
  await jobs.finish(job!);
});

test.serial('a served accept lets go of its wait (timer, abort listener, watch) only after its caller has the jobs', async (t) => {
  const { jobs, db, parked } = await openHandoverJobs(t);
  const watches = db.calls.watches;
  const controller = new AbortController();
  let listenersAtResume: number | undefined;
  const accepting = jobs.acceptMany(T1, 1, { timeout: 60_000, signal: controller.signal }).then((taken) => {
    listenersAtResume = getEventListeners(controller.signal, 'abort').length;
    return taken;
  });
  await parked(watches);
  t.is(getEventListeners(controller.signal, 'abort').length, 1, 'the waiting accept listens to its signal');
  await jobs.add(T1, 'j1');
  const [job] = await accepting;
  t.is(job?.id, 'j1');
  t.is(listenersAtResume, 1, 'the caller resumed before the wait was let go');
  await new Promise((resolve) => setImmediate(resolve));
  t.is(getEventListeners(controller.signal, 'abort').length, 0, 'and it is let go in the same turn');
  await jobs.finish(job!);
});
