// The embedded store's `durability` option on openJobs and startJobs: it
// reaches the engine of the process that owns the store, a client's calls
// get the owner's durability whatever the client asked for, and it is
// refused where it does not apply.

import { JobsError, openJobs } from '@jobtree/core';
import test from 'ava';
import { startJobs } from 'jobtree';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { tempDataDir } from './fixtures/peers.js';

/**
 * A lone commit with `'flush'` durability is written in place (synced before
 * it returns); with `'deferred'` never. Making that path throw tells which
 * durability the owner's engine has.
 */
function refuseCommitsWrittenInPlace(t: { teardown(fn: () => void): void }): void {
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.writeNow = writeNow;
  });
  LmdbStore.prototype.writeNow = () => {
    throw new Error('a commit was written in place, synced before it returned');
  };
}

test.serial("the owner's durability applies to its own calls and to its clients' calls", async (t) => {
  const dir = await tempDataDir(t, 'durability-owner');
  const owner = await openJobs({ path: dir, durability: 'deferred' });
  t.teardown(() => owner.close());
  const client = await openJobs({ path: dir, role: 'client', durability: 'flush', ownerWaitMs: 5_000 });
  t.teardown(() => client.close());
  refuseCommitsWrittenInPlace(t);
  await owner.setTypeTimeout('mail', 30);
  await owner.add('mail', 'from-owner', {});
  await client.add('mail', 'from-client', {});
  t.is(await owner.getJobState('mail', 'from-client'), 'pending');
  t.is(await client.getJobState('mail', 'from-owner'), 'pending');
});

test.serial('startJobs passes durability to the store it owns', async (t) => {
  const dir = await tempDataDir(t, 'durability-app');
  const app = await startJobs({ path: dir, durability: 'deferred', threads: 1, logLevel: 'silent' });
  t.teardown(() => app.close());
  refuseCommitsWrittenInPlace(t);
  await app.jobs.setTypeTimeout('mail', 30);
  await app.jobs.add('mail', 'one', {});
  t.is(await app.jobs.getJobState('mail', 'one'), 'pending');
});

test('durability is flush or deferred, and only for the embedded store by path', async (t) => {
  const dir = await tempDataDir(t, 'durability-refused');
  for (const durability of ['sync', 1, null]) {
    const error = await t.throwsAsync(openJobs({ path: dir, durability } as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option');
    const refused = await t.throwsAsync(startJobs({ path: dir, durability, logLevel: 'silent' } as never), { instanceOf: JobsError });
    t.is(refused?.code, 'invalid_option');
  }
  const fdb = await t.throwsAsync(openJobs({ clusterFile: '/nonexistent/fdb.cluster', durability: 'deferred' } as never), {
    instanceOf: JobsError,
  });
  t.is(fdb?.code, 'invalid_option');
  t.regex(fdb?.message ?? '', /FoundationDB/);
});
