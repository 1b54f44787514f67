// A client's call whose arguments the wire cannot carry (job data that the
// owner would store, JSON nested deeper than msgpackr packs) fails with
// JobsError `invalid_job_data`, as the owner's answer that cannot cross
// does, not with the encoder's RangeError; and the connection carries on.

import { JobsError } from '@jobtree/core';
import test from 'ava';
import { clientOfPeerOwner } from './fixtures/peers.js';

/** JSON that stores and reads back, but nests deeper than msgpackr's recursive pack goes. */
function tooDeepForTheWire(): unknown {
  return JSON.parse(`${'['.repeat(1_800)}${']'.repeat(1_800)}`);
}

test('a call whose arguments cannot cross fails with JobsError invalid_job_data, and the next call goes through', async (t) => {
  const jobs = await clientOfPeerOwner(t, 'call-cannot-cross', 'mail');
  const adding = await t.throwsAsync(jobs.add('mail', 'deep', tooDeepForTheWire()));
  t.true(adding instanceof JobsError, `${adding?.name}: ${adding?.message}`);
  t.is((adding as JobsError).code, 'invalid_job_data');
  t.is(await jobs.getJobState('mail', 'deep'), undefined);
  await jobs.add('mail', 'plain', { n: 1 });
  const job = await jobs.accept('mail');
  t.is(job?.id, 'plain');
  if (job === undefined) return;
  const finishing = await t.throwsAsync(jobs.finish(job, tooDeepForTheWire()));
  t.is((finishing as JobsError).code, 'invalid_job_data');
  t.is(await jobs.finish(job, { sent: true }), 'finished');
});
