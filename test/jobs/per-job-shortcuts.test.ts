// The per-job shortcuts of the add, accept and finish paths agree with the
// general ones: records encoded from Node's buffer pool, job data decoded
// without a view (and `null` without JSON.parse), the activity key read
// straight from a record, addMany's specs read as their own options, and the
// options-free add sharing one change set.

import test from 'ava';
import fc from 'fast-check';
import { decodeJobData, decodeJobDataAt, encodeJobData } from '../../packages/core/src/jobs/job-data.js';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { claimKey, dequeuePending, enqueuePending } from '../../packages/core/src/jobs/pending-queue.js';
import { hasPrefix } from '../../packages/core/src/keys/has-prefix.js';
import { Subspace } from '../../packages/core/src/keys/subspace.js';
import { appendTupleString } from '../../packages/core/src/keys/tuple-append.js';
import { decodeJobRecord, encodeJobRecord, newLock, RECORD_HEADER_BYTES, recordSeq } from '../../packages/core/src/jobs/job-record.js';
import type { JobRecord } from '../../packages/core/src/jobs/job-record.js';
import { openTempJobs, T1 } from './temp-jobs.js';

const keys = new JobKeys().forType('t');

const jsonArb = fc.oneof(fc.constant(null), fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as unknown));

test('a record encoded from the buffer pool holds zeros where a pending or finished record has no sequence or lock', (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom<JobRecord['state']>('pending', 'finished'),
      fc.nat(1_000),
      fc.nat(),
      fc.boolean(),
      jsonArb,
      (state, priority, scheduledTime, continuous, data) => {
        // Leave non-zero bytes in the pool where the next small buffers come from.
        Buffer.allocUnsafe(256).fill(0xff);
        const record: JobRecord = {
          state,
          seq: undefined,
          lock: undefined,
          resubmit: false,
          continuous,
          priority,
          scheduledTime,
          attempts: 0,
          outcome: state === 'finished' ? 'succeeded' : undefined,
          outcomeRow: false,
          finishedAt: undefined,
          retryPolicy: false,
          traceContext: false,
          data: encodeJobData(data),
        };
        const value = encodeJobRecord(record);
        t.true(value.subarray(1, 29).every((byte) => byte === 0));
        t.deepEqual(decodeJobRecord(value), record);
      },
    ),
  );
});

test('a running record encoded from the pool keeps its lock and leaves its fresh sequence unset but for the user version', (t) => {
  Buffer.allocUnsafe(256).fill(0xff);
  const lock = newLock();
  const value = encodeJobRecord(
    { state: 'running', seq: undefined, lock, resubmit: false, continuous: false, priority: 1, scheduledTime: 2, data: encodeJobData(null) },
    true,
    7,
  );
  t.deepEqual([...recordSeq(value)], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
  t.is(decodeJobRecord(value).lock, lock);
});

test('job data decodes the same from a Buffer, from a plain Uint8Array and from an offset in a record', (t) => {
  fc.assert(
    fc.property(jsonArb, (data) => {
      const encoded = encodeJobData(data);
      const expected = JSON.parse(encoded.toString('utf8')) as unknown;
      t.deepEqual(decodeJobData(encoded), expected);
      t.deepEqual(decodeJobData(new Uint8Array(encoded)), expected);
      const record = Buffer.concat([Buffer.alloc(RECORD_HEADER_BYTES, 0xab), encoded]);
      t.deepEqual(decodeJobDataAt(record, RECORD_HEADER_BYTES), expected);
    }),
  );
  // `null` is read without JSON.parse; strings and arrays that merely contain it are not.
  t.is(decodeJobData(Buffer.from('null')), null);
  t.is(decodeJobData(Buffer.from('"null"')), 'null');
  t.deepEqual(decodeJobDataAt(Buffer.from('xxnull'), 2), null);
  t.deepEqual(decodeJobDataAt(Buffer.from('[null]'), 0), [null]);
});

test('hasPrefix answers as comparing the key\'s first bytes with the prefix does', (t) => {
  const bytes = fc.uint8Array({ maxLength: 12 }).map((array) => Buffer.from(array.map((byte) => byte % 3)));
  fc.assert(
    fc.property(bytes, bytes, (key, prefix) => {
      const expected = key.length >= prefix.length && key.subarray(0, prefix.length).equals(prefix);
      t.is(hasPrefix(key, prefix), expected);
      t.is(hasPrefix(Buffer.concat([prefix, key]), prefix), true);
    }),
  );
});

test('ids written byte by byte (short, ASCII) and through Buffer#write (the rest) make the keys fdb-tuple packs', (t) => {
  const subspace = Subspace.of('jobs', 'data', 't');
  const ids = ['x'.repeat(63), 'x'.repeat(64), 'x'.repeat(65), '\u007f', '\u0080', 'a\u0000', 'ab\u00e9', `${'y'.repeat(63)}\u0000`];
  for (const id of ids) {
    t.deepEqual(appendTupleString(subspace.prefix, id), subspace.pack(id), JSON.stringify(id));
    const expected = keys.pending.pack([-3, { type: 'double', value: 12.5 }, id]);
    t.deepEqual(keys.pendingKey(3, 12.5, id), expected, JSON.stringify(id));
  }
});

test('a claim is a small integer that equal keys share, and a dequeue passes over the claimed entries only', async (t) => {
  const { database } = await openTempJobs(t);
  const queue = new JobKeys().forType('claims');
  const key = queue.pendingKey(0, 1, 'a');
  t.is(claimKey(key), claimKey(Buffer.from(key)));
  t.true(Number.isInteger(claimKey(key)) && claimKey(key) >= 0 && claimKey(key) < 2 ** 30);
  const ids = ['a', 'b', 'c', 'd', 'e'];
  await database.doTransaction((tx) => {
    for (const id of ids) enqueuePending(tx, queue, id, 0, 1);
  });
  const claimed = new Set([claimKey(queue.pendingKey(0, 1, 'b')), claimKey(queue.pendingKey(0, 1, 'd'))]);
  const picked = await database.doTransaction(async (tx) => {
    const result = await dequeuePending(tx, queue, undefined, 5, { claimed, claim: () => undefined });
    return { ids: result.jobs.map((job) => job.id).sort(), skippedClaims: result.skippedClaims };
  });
  t.deepEqual(picked, { ids: ['a', 'c', 'e'], skippedClaims: true });
});

test('the activity key read from a running record is the one its sequence names', (t) => {
  const seq = Buffer.from('0102030405060708090a0b0c', 'hex');
  const value = encodeJobRecord({
    state: 'running',
    seq,
    lock: newLock(),
    resubmit: false,
    continuous: true,
    priority: 0,
    scheduledTime: 0,
    data: encodeJobData({ a: 1 }),
  });
  t.deepEqual(keys.activityKeyOfRecord(value), keys.activityKey(seq));
});

test('addMany reads each spec\'s options from the spec itself, and an add without options changes nothing it should not', async (t) => {
  const { jobs } = await openTempJobs(t);
  const now = Math.floor(Date.now() / 1000);
  await jobs.addMany(T1, [
    { id: 'a', data: { n: 1 }, priority: 5, scheduledTime: now - 10, continuous: true },
    { id: 'b' },
    { id: 'c', data: [1, 2] },
  ]);
  const a = await jobs.getJob(T1, 'a');
  t.like(a, { state: 'pending', data: { n: 1 }, priority: 5, scheduledTime: now - 10, continuous: true });
  t.like(await jobs.getJob(T1, 'b'), { state: 'pending', data: null, priority: 0, continuous: false });
  t.like(await jobs.getJob(T1, 'c'), { data: [1, 2], priority: 0 });
  // Re-adding a pending job with no data and no options leaves it as it is (one shared change set, never written to).
  await jobs.add(T1, 'a');
  await jobs.addMany(T1, [{ id: 'c' }]);
  t.like(await jobs.getJob(T1, 'a'), { data: { n: 1 }, priority: 5, scheduledTime: now - 10, continuous: true });
  t.like(await jobs.getJob(T1, 'c'), { data: [1, 2], priority: 0 });
  await jobs.add(T1, 'd');
  t.like(await jobs.getJob(T1, 'd'), { state: 'pending', data: null, priority: 0, continuous: false });
});

test('addMany still refuses a spec that is not an object, and bad options inside a spec, before writing anything', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.addMany(T1, [{ id: 'ok' }, 7 as unknown as { id: string }]), { code: 'invalid_option' } as never);
  await t.throwsAsync(jobs.addMany(T1, [{ id: 'ok' }, { id: 'bad', priority: -1 }]), { code: 'invalid_priority' } as never);
  t.is(await jobs.getJob(T1, 'ok'), undefined);
});
