// The accept path's shortcuts agree with the general ones: on the embedded
// engine a batch reads its queue page and records without promises (any
// other transaction still reads through the public async calls, with the
// same outcome); a picked entry's id, data key and id bytes come straight
// from the entry's key, exactly as decoding it and encoding the id again
// would make them; a record read is made running in place, byte for byte as
// encoding the running record would make it; and the pick is still random
// among the front.

import test from 'ava';
import fc from 'fast-check';
import type { Database, Job, Transaction } from '@jobtree/core';
import { BatchClaims } from '../../packages/core/src/jobs/accept-batcher.js';
import { encodeJobData } from '../../packages/core/src/jobs/job-data.js';
import { JobKeys, parsePendingKey } from '../../packages/core/src/jobs/job-keys.js';
import { decodeJobRecord, encodeJobRecord, makeRunningUnderNewLock, newLock } from '../../packages/core/src/jobs/job-record.js';
import type { JobRecordInput } from '../../packages/core/src/jobs/job-record.js';
import { dequeuePending, enqueuePending, FRONT_CANDIDATES } from '../../packages/core/src/jobs/pending-queue.js';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Ids that take every path: short ASCII, non-ASCII, longer than the copy loop, with NUL bytes. */
const IDS = ['a', 'job-17', 'é-ü', '😀 emoji', 'x'.repeat(65), 'nul\u0000inside', '\u0000', `${'y'.repeat(70)}\u0000z`];

const idArb = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.constantFrom(...IDS));

/** Thrown out of a transaction body so that it does not commit. */
class Rollback extends Error {}

async function rolledBack<T>(database: Database, body: (tx: Transaction) => T | Promise<T>): Promise<T> {
  let result: T | undefined;
  await database
    .doTransaction(async (tx) => {
      result = await body(tx);
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return result as T;
}

test('on the embedded engine a dequeue answers at once; through another transaction it answers with a promise', async (t) => {
  const { database } = await openTempJobs(t);
  const queue = new JobKeys().forType('sync');
  await database.doTransaction((tx) => enqueuePending(tx, queue, 'a', 0, 1));
  await rolledBack(database, (tx) => {
    const result = dequeuePending(tx, queue, undefined, 1);
    t.false(result instanceof Promise);
  });
  const wrapped = new RecordingDatabase(database);
  await rolledBack(wrapped, async (tx) => {
    const result = dequeuePending(tx, queue, undefined, 1);
    t.true(result instanceof Promise);
    t.deepEqual(
      (await result).jobs.map((job) => job.id),
      ['a'],
    );
  });
});

test('the data key made from a pending key\'s id element is the one keys.job(id) makes, for any id', (t) => {
  const keys = new JobKeys().forType('elements');
  fc.assert(
    fc.property(idArb, fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.double({ noNaN: true }), (id, priority, time) => {
      const pending = keys.pendingKey(priority, time, id);
      const at = keys.pendingPriorityPrefix(priority).length + 9;
      t.deepEqual(keys.jobFromElement(pending, at), keys.job(id));
    }),
  );
});

test('a dequeued entry\'s id, data key and id bytes are what decoding its key makes, on both read paths', async (t) => {
  const { database } = await openTempJobs(t);
  const wrapped = new RecordingDatabase(database);
  const keys = new JobKeys().forType('parts');
  await database.doTransaction((tx) => {
    for (const [index, id] of IDS.entries()) enqueuePending(tx, keys, id, index % 3, 100 + (index % 2));
  });
  for (const [name, db] of [
    ['embedded', database],
    ['wrapped', wrapped],
  ] as const) {
    for (const maxScheduledTime of [undefined, 1_000]) {
      const jobs = await rolledBack(db, async (tx) => (await dequeuePending(tx, keys, maxScheduledTime, IDS.length)).jobs);
      t.deepEqual(jobs.map((job) => job.id).sort(), [...IDS].sort(), `${name} ${maxScheduledTime}`);
      for (const job of jobs) {
        const parts = parsePendingKey(keys, job.key);
        t.is(job.id, parts.id);
        t.is(job.priority, parts.priority);
        t.is(job.scheduledTime, parts.scheduledTime);
        t.deepEqual(job.recordKey, keys.job(parts.id));
        // Left to the caller to encode when the id holds NULs (escaped in the key).
        if (job.idBytes !== undefined) t.deepEqual(job.idBytes, Buffer.from(parts.id, 'utf8'));
        else t.true(parts.id.includes('\u0000'));
      }
    }
  }
});

test('accept on the embedded engine and through a wrapper hands out the same jobs, activity rows and data', async (t) => {
  const runs: Record<string, unknown> = {};
  for (const name of ['embedded', 'wrapped'] as const) {
    const { jobs } = await openTempJobs(t, name === 'wrapped' ? (db) => new RecordingDatabase(db) : undefined);
    await jobs.addMany(
      T1,
      IDS.map((id, index) => ({ id, data: { index, id }, priority: index % 2 })),
    );
    const taken = await jobs.acceptMany(T1, 100);
    const byId = new Map(taken.map((job) => [job.id, job]));
    t.is(byId.size, IDS.length, name);
    for (const [index, id] of IDS.entries()) {
      const job = byId.get(id) as Job;
      t.deepEqual(job.data, { index, id });
      t.is(job.priority, index % 2);
      t.is(await jobs.getJobState(T1, id), 'running');
    }
    // Higher priority first.
    t.deepEqual(
      taken.map((job) => job.priority),
      [...taken.map((job) => job.priority)].sort((a, b) => b - a),
    );
    t.deepEqual((await jobs.getActiveJobIds(T1)).sort(), [...IDS].sort(), name);
    // Each lock finishes its own job: the records were rewritten under them.
    const finished = await jobs.finishMany(taken.map((job) => ({ job })));
    t.true(finished.every((outcome) => outcome.status === 'fulfilled'));
    runs[name] = (await jobs.getJobs(T1)).map((info) => [info.id, info.state]).sort();
  }
  t.deepEqual(runs.embedded, runs.wrapped);
});

test('accept with noSchedule hands out each job with its own scheduled time', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = Math.floor(Date.now() / 1000);
  const times = [now + 500, now - 20, now + 3_600, now + 7];
  await jobs.addMany(
    T1,
    times.map((scheduledTime, index) => ({ id: `s${index}`, scheduledTime })),
  );
  // Jobs of one priority are of equal rank under noSchedule: picked in any order.
  const taken = await jobs.acceptMany(T1, 10, { noSchedule: true });
  t.deepEqual(
    taken.map((job) => [job.id, job.scheduledTime]).sort(),
    times.map((time, index) => [`s${index}`, time]),
  );
});

test('a stale queue entry taken by the synchronous path is cleared and its job handed out once', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'only', { n: 1 });
  const keys = new JobKeys().forType(T1);
  // An entry at a rank the record does not have (better, so it is read first).
  await database.doTransaction((tx) => enqueuePending(tx, keys, 'only', 9, 0));
  const taken = await jobs.acceptMany(T1, 10, { timeout: 0 });
  t.deepEqual(
    taken.map((job) => job.id),
    ['only'],
  );
  const rows = await database.doTransaction((tx) => tx.getRange(keys.pending.range().begin, keys.pending.range().end));
  t.is(rows.length, 0);
});

test('a record made running in place has the bytes of the running record encoded under its new lock', (t) => {
  fc.assert(
    fc.property(
      fc.nat(1_000),
      fc.nat(),
      fc.boolean(),
      fc.jsonValue(),
      fc.nat(1_023),
      (priority, scheduledTime, continuous, data, userVersion) => {
        const record: JobRecordInput = {
          state: 'pending',
          seq: undefined,
          lock: undefined,
          resubmit: false,
          continuous,
          priority,
          scheduledTime,
          data: encodeJobData(JSON.parse(JSON.stringify(data)) ?? null),
        };
        const inPlace = encodeJobRecord(record);
        const lock = makeRunningUnderNewLock(inPlace, userVersion);
        t.deepEqual(inPlace, encodeJobRecord({ ...record, state: 'running', lock }, true, userVersion));
      },
    ),
  );
});

test('a record made running under a new lock holds the bytes of the lock it returns, across refills of the lock pool', (t) => {
  const pending = encodeJobRecord({
    state: 'pending',
    seq: undefined,
    lock: undefined,
    resubmit: false,
    continuous: true,
    priority: 3,
    scheduledTime: 12,
    data: encodeJobData({ a: 1 }),
  });
  const locks = new Set<string>();
  // More than one fill of 256 locks, with locks taken the other way in between.
  for (let i = 0; i < 700; i++) {
    if (i % 7 === 0) locks.add(newLock());
    const value = Buffer.from(pending);
    const lock = makeRunningUnderNewLock(value, i % 1_024);
    t.regex(lock, /^[0-9a-f]{32}$/);
    locks.add(lock);
    t.deepEqual(value, encodeJobRecord({ ...decodeJobRecord(pending), state: 'running', lock }, true, i % 1_024));
  }
  t.is(locks.size, 700 + 100);
});

test('the pick stays random among the front, and passes over claimed entries', async (t) => {
  const { database } = await openTempJobs(t);
  const keys = new JobKeys().forType('random');
  const ids = Array.from({ length: FRONT_CANDIDATES + 8 }, (_, index) => `r${String(index).padStart(2, '0')}`);
  await database.doTransaction((tx) => {
    for (const id of ids) enqueuePending(tx, keys, id, 0, 5);
  });
  const claimed = new Set<number>();
  const claims = new BatchClaims(claimed);
  // The first two entries are claimed by a batch in flight.
  claims.claim(keys.pendingKey(0, 5, 'r00'));
  claims.claim(keys.pendingKey(0, 5, 'r01'));
  const seen = new Map<string, number>();
  await rolledBack(database, async (tx) => {
    for (let round = 0; round < 2_000; round++) {
      const result = await dequeuePending(tx, keys, 10, 1, { claimed, claim: () => undefined });
      t.true(result.skippedClaims);
      const id = result.jobs[0]?.id as string;
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
  });
  // The read covers the claimed entries plus FRONT_CANDIDATES more: each of those is picked, nothing past them.
  const front = ids.slice(2, 2 + FRONT_CANDIDATES);
  t.deepEqual([...seen.keys()].sort(), front);
});
