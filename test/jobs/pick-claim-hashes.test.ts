// What a pick of the pending queue's front hands to the take that follows:
// the claim hash it computed while passing over other batches' claims (the
// take claims the entry under it, not under a second hash), and, with
// scheduled times ignored, each entry's own scheduled time read from its key.

import test from 'ava';
import { BatchClaims } from '../../packages/core/src/jobs/accept-batcher.js';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { claimKey, dequeuePending, enqueuePending, takePending } from '../../packages/core/src/jobs/pending-queue.js';
import { openTempJobs } from './temp-jobs.js';

test('a pick that passes over claims carries each picked entry\'s own claim hash, and the take claims it under that hash', async (t) => {
  const { database } = await openTempJobs(t);
  const queue = new JobKeys().forType('hashes');
  const ids = Array.from({ length: 40 }, (_, i) => `h${String(i).padStart(2, '0')}`);
  await database.doTransaction((tx) => {
    for (const id of ids) enqueuePending(tx, queue, id, 0, 7);
  });
  const shared = new Set<number>([claimKey(queue.pendingKey(0, 7, 'h03')), claimKey(queue.pendingKey(0, 7, 'h17'))]);
  const claims = new BatchClaims(shared);
  const picked = await database.doTransaction(async (tx) => {
    const result = await dequeuePending(tx, queue, 10, 30, claims);
    for (const job of result.jobs) takePending(tx, job.key, claims, job.claim);
    return result.jobs;
  });
  t.is(picked.length, 30);
  for (const job of picked) {
    t.not(job.id, 'h03');
    t.not(job.id, 'h17');
    t.is(job.claim, claimKey(job.key), job.id);
    t.true(shared.has(claimKey(job.key)), job.id);
  }
  t.is(shared.size, 32);
  claims.release();
  t.deepEqual([...shared].sort(), [claimKey(queue.pendingKey(0, 7, 'h03')), claimKey(queue.pendingKey(0, 7, 'h17'))].sort());
});

test('a pick with no claims to pass over leaves the hash to the take, which claims the entry under its key\'s hash', async (t) => {
  const { database } = await openTempJobs(t);
  const queue = new JobKeys().forType('no-claims');
  await database.doTransaction((tx) => {
    for (const id of ['a', 'b', 'c']) enqueuePending(tx, queue, id, 0, 7);
  });
  const shared = new Set<number>();
  const claims = new BatchClaims(shared);
  const picked = await database.doTransaction(async (tx) => {
    const result = await dequeuePending(tx, queue, 10, 3, claims);
    for (const job of result.jobs) takePending(tx, job.key, claims, job.claim);
    return result.jobs;
  });
  t.deepEqual(picked.map((job) => job.claim), [undefined, undefined, undefined]);
  t.deepEqual([...shared].sort(), picked.map((job) => claimKey(job.key)).sort());
});

test('with scheduled times ignored, each pick carries the scheduled time of its own entry', async (t) => {
  const { database } = await openTempJobs(t);
  const queue = new JobKeys().forType('any-time');
  const times = new Map([
    ['early', 5],
    ['late', 1e12],
    ['negative', -3.25],
    ['fraction', 17.5],
  ]);
  await database.doTransaction((tx) => {
    for (const [id, time] of times) enqueuePending(tx, queue, id, 2, time);
  });
  const picked = await database.doTransaction(async (tx) => (await dequeuePending(tx, queue, undefined, 4)).jobs);
  t.is(picked.length, 4);
  for (const job of picked) {
    t.is(job.scheduledTime, times.get(job.id) as number, job.id);
    t.is(job.priority, 2);
  }
});

test('a claim given its hash and one that hashes the key itself land on the same entry', (t) => {
  const shared = new Set<number>();
  const claims = new BatchClaims(shared);
  const key = new JobKeys().forType('x').pendingKey(0, 1, 'k');
  claims.claim(key);
  claims.claim(key, claimKey(key));
  t.deepEqual([...shared], [claimKey(key)]);
});
