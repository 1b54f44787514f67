// A client process of a shared embedded store takes jobs under the limits
// the store holds: the owner's concurrency counts the client's takes and
// the owner's alike, a client's finish frees a slot for the owner, and a
// killed client's slots come back with its jobs.

import { openJobs } from '@jobtree/core';
import test from 'ava';
import { Peer, tempDataDir } from './fixtures/peers.js';

test("a client process takes jobs under the owner's type limits, and its finish frees the slot", async (t) => {
  const dir = await tempDataDir(t, 'type-limits');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  const client = await openJobs({ path: dir });
  t.teardown(() => client.close());
  t.is(client.role, 'client');
  await owner.run(`
    await jobs.setTypeTimeout('mail', 30);
    await jobs.setTypeLimits('mail', { concurrency: 2 });
    await jobs.addMany('mail', [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
  `);
  t.deepEqual(await client.getTypeLimits('mail'), { concurrency: 2 });
  const taken = await client.acceptMany('mail', 4, { timeout: 0 });
  t.is(taken.length, 2, 'the client gets no more than the concurrency');
  t.is(await owner.run(`return (await jobs.acceptMany('mail', 4, { timeout: 0 })).length`), 0, 'nor does the owner while they run');
  await client.finish(taken[0]!);
  t.is(await owner.run(`return (await jobs.acceptMany('mail', 4, { timeout: 0 })).length`), 1);
});

test("a killed client process's slots come back when its jobs are re-enqueued, as the activity monitor does", async (t) => {
  const dir = await tempDataDir(t, 'type-limits-kill');
  const jobs = await openJobs({ path: dir });
  t.teardown(() => jobs.close());
  t.is(jobs.role, 'owner');
  await jobs.setTypeTimeout('mail', 30);
  await jobs.setTypeLimits('mail', { concurrency: 2 });
  await jobs.addMany('mail', [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
  const client = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(client.role, 'client');
  t.is(await client.run(`return (await jobs.acceptMany('mail', 3, { timeout: 0 })).length`), 2);
  await client.kill('SIGKILL');
  t.deepEqual(await jobs.acceptMany('mail', 3, { timeout: 0 }), [], 'its jobs still hold the slots');
  const since = await jobs.getActivityVersionstamp('mail');
  t.is((await jobs.reEnqueueInactive('mail', since!)).length, 2);
  t.is((await jobs.acceptMany('mail', 3, { timeout: 0 })).length, 2);
});
