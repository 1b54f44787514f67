// A client's accept checks its options as the owner does, the signal
// included (which stays in the client, and so never reaches the owner's
// checks): a bad one is JobsError `invalid_option`, not the TypeError of
// using it; and an accept whose signal has already aborted takes nothing,
// as in the owner, where sent, it would take a job for a caller that gave up.

import { JobsError } from '@jobtree/core';
import test from 'ava';
import { bounded, clientOfPeerOwner } from './fixtures/peers.js';

test('a client accept with a bad signal is refused, and one already aborted takes nothing', async (t) => {
  const jobs = await clientOfPeerOwner(t, 'accept-aborted-signal', 'mail');
  await jobs.add('mail', 'm1');

  const bad = { signal: 'stop' } as unknown as { signal: AbortSignal };
  for (const accepting of [jobs.accept('mail', bad), jobs.acceptMany('mail', 2, bad)]) {
    const error = await t.throwsAsync(accepting);
    t.true(error instanceof JobsError, `${error?.name}: ${error?.message}`);
    t.is((error as JobsError).code, 'invalid_option');
  }

  const aborted = AbortSignal.abort();
  t.is(await bounded(jobs.accept('mail', { signal: aborted, timeout: 60_000 }), 30_000, 'an aborted accept'), undefined);
  t.deepEqual(await bounded(jobs.acceptMany('mail', 2, { signal: aborted, timeout: 60_000 }), 30_000, 'an aborted acceptMany'), []);
  t.is(await jobs.getJobState('mail', 'm1'), 'pending');
  // A bad option is refused before the signal is looked at, as in the owner.
  await t.throwsAsync(jobs.accept('mail', { signal: aborted, timeout: -1 }), { instanceOf: JobsError });
  t.like(await jobs.accept('mail'), { id: 'm1' });
});
