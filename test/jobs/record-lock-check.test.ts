// The byte-level checks and rewrites finish and update make on a job's
// encoded record: the lock check compares the caller's lock with the stored
// bytes without building a string, and a finish without new data rewrites the
// record it read in place. Through finish and update, only the exact lock the
// accept handed out (32 lower-case hex digits) owns a running job: an
// upper-case spelling of it, a lock with a character that is not a hex digit,
// or a longer or shorter one is refused, and the job stays running for its
// real owner.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import {
  encodeJobRecord,
  finishedRecordBytes,
  finishRecordInPlace,
  newLock,
  recordRunningUnder,
} from '../../packages/core/src/jobs/job-record.js';
import type { JobRecordInput } from '../../packages/core/src/jobs/job-record.js';
import { openTempJobs, T1 } from './temp-jobs.js';

function running(lock: string, continuous = false): Buffer {
  const record: JobRecordInput = {
    state: 'running',
    seq: Buffer.from('0102030405060708090a0005', 'hex'),
    lock,
    resubmit: true,
    continuous,
    priority: 3,
    scheduledTime: 1_700_000_000.5,
    data: Buffer.from('{"n":1}'),
  };
  return encodeJobRecord(record);
}

test('a record is running under exactly the lock that took it, as newLock wrote it', (t) => {
  for (let i = 0; i < 200; i++) {
    const lock = newLock();
    const value = running(lock);
    t.true(recordRunningUnder(value, lock));
    t.false(recordRunningUnder(value, newLock()));
    // The same bytes spelled otherwise, or a lock of another length, are not the lock.
    if (/[a-f]/.test(lock)) t.false(recordRunningUnder(value, lock.toUpperCase()));
    t.false(recordRunningUnder(value, lock.slice(0, 31)));
    t.false(recordRunningUnder(value, `${lock}0`));
    t.false(recordRunningUnder(value, `${lock.slice(0, 30)}zz`));
  }
  const lock = newLock();
  const pending = encodeJobRecord({ ...decodeRunning(lock), state: 'pending', seq: undefined, lock: undefined });
  t.false(recordRunningUnder(pending, lock));
  t.false(recordRunningUnder(running(lock).subarray(0, 40), lock));
});

test('a finish without new data rewrites the record it read in place, to the same bytes as a fresh copy', (t) => {
  for (const continuous of [false, true]) {
    const value = running(newLock(), continuous);
    const expected = finishedRecordBytes(value, undefined, 1_700_000_000);
    const rewritten = finishRecordInPlace(value, 'succeeded', false, 1_700_000_000);
    t.is(rewritten, value);
    t.deepEqual(rewritten, expected);
    t.deepEqual(
      rewritten,
      encodeJobRecord({
        state: 'finished',
        seq: undefined,
        lock: undefined,
        resubmit: false,
        continuous,
        priority: 3,
        scheduledTime: 1_700_000_000.5,
        finishedAt: 1_700_000_000,
        data: Buffer.from('{"n":1}'),
      }),
    );
  }
});

function decodeRunning(lock: string): JobRecordInput {
  return {
    state: 'running',
    seq: Buffer.alloc(12),
    lock,
    resubmit: false,
    continuous: false,
    priority: 0,
    scheduledTime: 1,
    data: Buffer.from('null'),
  };
}

test('finish and update refuse any lock but the exact one, and the job stays its owner\'s', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'locked', { n: 1 });
  const job = (await jobs.accept(T1)) as Job;
  t.truthy(job);
  t.regex(job.lock, /^[0-9a-f]{32}$/);
  const lower = job.lock;
  // A lock with a letter (a-f) in it, so that its upper-case spelling differs.
  const upper = lower.toUpperCase();
  const notHex = `${lower.slice(0, 31)}g`;
  // The same digits with one changed by the case-folding distance of ASCII letters (0x20): '0' -> 'P' is not hex either.
  const shifted = lower.replace(/[0-9]/, (digit) => String.fromCharCode(digit.charCodeAt(0) + 0x20));
  const candidates = [notHex, `${lower}0`, lower.slice(0, 31), ''];
  for (const variant of [upper, shifted]) if (variant !== lower) candidates.push(variant);
  for (const lock of candidates) {
    const forged = { ...job, lock };
    const finish = await t.throwsAsync(jobs.finish(forged), undefined, `finish with lock ${JSON.stringify(lock)}`);
    t.true(finish instanceof JobsError, String(finish));
    const update = await t.throwsAsync(jobs.update(forged), undefined, `update with lock ${JSON.stringify(lock)}`);
    t.true(update instanceof JobsError, String(update));
  }
  t.is(await jobs.getJobState(T1, 'locked'), 'running');
  t.is(await jobs.finish(job), 'finished');
});
