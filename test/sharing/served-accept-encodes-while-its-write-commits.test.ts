// A client's waiting accept handed a job by a write has its answer encoded
// while that write commits, and sent only once the write is readable: what
// is left between the commit becoming readable and the job leaving is the
// socket write. An answer encoded for an attempt that fails or is retried
// is never sent: the client gets the jobs of the attempt that committed.

import test, { type ExecutionContext } from 'ava';
import { FdbError, FdbErrorCode } from '@jobtree/core';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import { ADD_AND_HANDOVER_WRITES, type HandoverSetup, openHandoverJobs } from '../jobs/handover/handover-setup.js';
import { T1 } from '../jobs/temp-jobs.js';
import { countParks } from './fixtures/parks.js';
import { bounded } from './fixtures/peers.js';
import { type CallLog, recordedCall } from './fixtures/recorded-call.js';

/** A served `accept` of T1 parked in the owner, its call recorded; resolves once it waits. */
async function parkedAccept(t: ExecutionContext, setup: HandoverSetup): Promise<{ log: CallLog; settled: Promise<unknown> }> {
  const served = servedJobsCalls(() => setup.jobs).get('accept')!;
  const log = recordedCall();
  const parks = countParks(t);
  const settled = Promise.resolve(served([T1, { timeout: 60_000 }], log.call));
  await parks.untilParked();
  // Parked as its transaction returned: let that turn end, so the next write starts at once.
  await new Promise((resolve) => setImmediate(resolve));
  return { log, settled };
}

/** A few turns of the event loop: more than the hand-over takes to tell a waiting listener. */
const someTurns = () => new Promise((resolve) => setTimeout(resolve, 20));

const jobIds = (log: CallLog, what: 'prepare' | 'answer') => log.events.filter((event) => event.what === what).map((event) => (event.value as Job).id);

test.serial("a served accept's answer is encoded while the write handing it its job waits to commit, and sent as encoded once it is readable", async (t) => {
  const setup = await openHandoverJobs(t);
  const { log, settled } = await parkedAccept(t, setup);
  const held = setup.holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = setup.jobs.add(T1, 'j1', {});
  await held.reached;
  await someTurns();
  t.deepEqual(
    log.events.map(({ what }) => what),
    ['prepare'],
    'encoded before the commit, not sent',
  );
  held.release();
  t.is(await adding, 'pending');
  await bounded(settled, 5_000, 'the accept');
  t.deepEqual(
    log.events.map(({ what }) => what),
    ['prepare', 'answer'],
  );
  // The very value encoded is answered: its bytes go out as they were encoded.
  t.is(log.events[1]!.value, log.events[0]!.value);
  t.is((log.events[1]!.value as Job).id, 'j1');
  await setup.jobs.finish(log.events[1]!.value as Job);
  t.is(await setup.jobs.getJobState(T1, 'j1'), 'finished');
});

test.serial('an answer encoded for an attempt that then failed is never sent; the next add answers with its own job', async (t) => {
  const setup = await openHandoverJobs(t);
  const { log, settled } = await parkedAccept(t, setup);
  const held = setup.holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = setup.jobs.add(T1, 'lost', {});
  await held.reached;
  await someTurns();
  held.release(new FdbError(FdbErrorCode.transaction_too_large, 'injected failure at commit'));
  await t.throwsAsync(adding);
  await someTurns();
  t.deepEqual(jobIds(log, 'answer'), [], 'the failed attempt answered nothing');
  t.is(await setup.jobs.add(T1, 'next', {}), 'pending');
  await bounded(settled, 5_000, 'the accept');
  t.deepEqual(jobIds(log, 'prepare'), ['lost', 'next']);
  t.deepEqual(jobIds(log, 'answer'), ['next']);
  await setup.jobs.finish(log.events.at(-1)!.value as Job);
  t.is(await setup.jobs.getJobState(T1, 'next'), 'finished');
});

test.serial('an answer encoded for an attempt that was then retried is not sent; the answer carries the lock of the attempt that committed', async (t) => {
  const setup = await openHandoverJobs(t);
  const { log, settled } = await parkedAccept(t, setup);
  const held = setup.holdAttemptAt(ADD_AND_HANDOVER_WRITES);
  const adding = setup.jobs.add(T1, 'again', {});
  await held.reached;
  await someTurns();
  const [encoded] = log.events;
  held.release(new FdbError(FdbErrorCode.not_committed, 'injected conflict at commit'));
  t.is(await adding, 'pending');
  await bounded(settled, 5_000, 'the accept');
  const answers = log.events.filter(({ what }) => what === 'answer');
  t.is(answers.length, 1);
  const job = answers[0]!.value as Job;
  t.not(job.lock, (encoded!.value as Job).lock, "the retry's lock, not the failed attempt's");
  await setup.jobs.finish(job);
  t.is(await setup.jobs.getJobState(T1, 'again'), 'finished');
});
