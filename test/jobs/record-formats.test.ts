// The stored form of a job record is versioned by the high nibble of its
// first byte. Records of format 0 (written before outcomes: a 46-byte header
// with no attempts) read as no failed attempts and, finished, as succeeded;
// the in-place rewrites of accept and finish keep their format, and a change
// that needs the attempts field writes the current format. A format this
// code does not know is corrupt_record, never read as something else.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import {
  decodeJobRecord,
  encodeJobRecord,
  finishRecordInPlace,
  makeRunningUnderNewLock,
  RECORD_HEADER_BYTES,
  recordAttempts,
  recordDataOffset,
  recordGroup,
  recordInFlow,
  recordOutcome,
  recordRetryPolicy,
  recordTraceContext,
  recordRunningUnder,
  recordState,
  withAttempts,
} from '../../packages/core/src/jobs/job-record.js';
import type { JobRecordInput } from '../../packages/core/src/jobs/job-record.js';

const LEGACY_HEADER_BYTES = 46;

/** `record` as a store written before outcomes holds it: format 0, no attempts field. */
function formatZero(record: JobRecordInput): Buffer {
  const current = encodeJobRecord(record);
  const legacy = Buffer.concat([current.subarray(0, LEGACY_HEADER_BYTES), current.subarray(RECORD_HEADER_BYTES)]);
  legacy[0] = (legacy[0] as number) & 0x0f;
  return legacy;
}

const pending: JobRecordInput = {
  state: 'pending',
  seq: undefined,
  lock: undefined,
  resubmit: false,
  continuous: true,
  priority: 4,
  scheduledTime: 1_700_000_000.25,
  data: Buffer.from('{"n":1}'),
};

test('a record of format 0 reads with no attempts, and finished as succeeded', (t) => {
  const legacy = formatZero(pending);
  t.deepEqual(decodeJobRecord(legacy), {
    ...pending,
    attempts: 0,
    outcome: undefined,
    outcomeRow: false,
    finishedAt: undefined,
    retryPolicy: false,
    traceContext: false,
  });
  t.is(recordDataOffset(legacy), LEGACY_HEADER_BYTES);
  t.is(recordAttempts(legacy), 0);
  const finished = formatZero({ ...pending, state: 'finished' });
  t.is(recordState(finished), 'finished');
  t.is(recordOutcome(finished), 'succeeded');
  // Finished before the finish log: no time, so no entry to look for.
  t.like(decodeJobRecord(finished), { outcome: 'succeeded', outcomeRow: false, finishedAt: undefined, data: pending.data });
});

test('accept and finish rewrite a record of format 0 in place and keep its format', (t) => {
  const record = formatZero(pending);
  const lock = makeRunningUnderNewLock(record, 3);
  t.is(record.length, LEGACY_HEADER_BYTES + pending.data.length);
  t.true(recordRunningUnder(record, lock));
  t.like(decodeJobRecord(record), { state: 'running', lock, continuous: true, priority: 4, attempts: 0, data: pending.data });
  finishRecordInPlace(record, 'failed', true, 1_700_000_000.5);
  t.is(recordDataOffset(record), LEGACY_HEADER_BYTES);
  t.like(decodeJobRecord(record), {
    state: 'finished',
    outcome: 'failed',
    outcomeRow: true,
    finishedAt: 1_700_000_000.5,
    continuous: true,
    data: pending.data,
  });
});

test("a job's retry policy flag stays through accept and finish in place, and reads as none in older records", (t) => {
  const record = encodeJobRecord({ ...pending, retryPolicy: true });
  t.true(recordRetryPolicy(record));
  makeRunningUnderNewLock(record, 1);
  t.like(decodeJobRecord(record), { state: 'running', retryPolicy: true, continuous: true });
  finishRecordInPlace(record, 'failed', true, 1_700_000_000.5);
  t.like(decodeJobRecord(record), { state: 'finished', outcome: 'failed', finishedAt: 1_700_000_000.5, retryPolicy: true, continuous: true });
  t.false(recordRetryPolicy(formatZero(pending)));
});

test("a job's trace context flag stays through accept and finish in place, next to its retry policy flag, and reads as none in older records", (t) => {
  const record = encodeJobRecord({ ...pending, traceContext: true });
  t.true(recordTraceContext(record));
  t.false(recordRetryPolicy(record));
  makeRunningUnderNewLock(record, 1);
  t.like(decodeJobRecord(record), { state: 'running', traceContext: true, retryPolicy: false, continuous: true });
  finishRecordInPlace(record, 'succeeded', false, 1_000);
  t.like(decodeJobRecord(record), { state: 'finished', outcome: 'succeeded', finishedAt: 1_000, traceContext: true, continuous: true });
  t.false(recordTraceContext(formatZero(pending)));
  t.false(recordTraceContext(encodeJobRecord({ ...pending, retryPolicy: true })));
});

test("a flow job's flag and the waiting state stay through encoding; the flag stays through accept and finish in place; older records are in no flow", (t) => {
  const waiting = encodeJobRecord({ ...pending, state: 'waiting', inFlow: true, traceContext: true });
  t.is(recordState(waiting), 'waiting');
  t.like(decodeJobRecord(waiting), { state: 'waiting', inFlow: true, traceContext: true, continuous: true });
  const record = encodeJobRecord({ ...pending, inFlow: true });
  t.true(recordInFlow(record));
  t.false(recordTraceContext(record));
  makeRunningUnderNewLock(record, 1);
  t.like(decodeJobRecord(record), { state: 'running', inFlow: true, continuous: true });
  finishRecordInPlace(record, 'cancelled', true, 2_000);
  t.like(decodeJobRecord(record), { state: 'finished', outcome: 'cancelled', inFlow: true });
  t.false(recordInFlow(formatZero(pending)));
  t.false(recordInFlow(encodeJobRecord({ ...pending, retryPolicy: true, traceContext: true })));
});

test("a job in a flow and a group keeps both in the record's extension, through accept and finish in place, its data after them", (t) => {
  const record = encodeJobRecord({ ...pending, inFlow: true, group: 'tenant-é' });
  t.true(recordInFlow(record));
  t.is(recordGroup(record), 'tenant-é');
  t.is(record.subarray(recordDataOffset(record)).toString(), '{"n":1}');
  makeRunningUnderNewLock(record, 1);
  finishRecordInPlace(record, 'succeeded', false, 3_000);
  t.like(decodeJobRecord(record), { state: 'finished', inFlow: true, group: 'tenant-é', continuous: true });
  t.is(decodeJobRecord(record).data.toString(), '{"n":1}');
  const grouped = encodeJobRecord({ ...pending, group: 'g' });
  t.false(recordInFlow(grouped));
  t.is(recordGroup(grouped), 'g');
  const inFlow = encodeJobRecord({ ...pending, inFlow: true });
  t.is(recordGroup(inFlow), undefined);
  t.is(decodeJobRecord(inFlow).data.toString(), '{"n":1}');
  t.is(recordGroup(encodeJobRecord(pending)), undefined);
});

test("an extension flag this code does not know (a newer version's) makes the record corrupt_record", (t) => {
  const record = encodeJobRecord({ ...pending, inFlow: true });
  record[RECORD_HEADER_BYTES] = (record[RECORD_HEADER_BYTES] as number) | 0x80;
  const error = t.throws(() => decodeJobRecord(record), { instanceOf: JobsError });
  t.is(error?.code, 'corrupt_record');
  const cut = encodeJobRecord({ ...pending, group: 'tenant' }).subarray(0, RECORD_HEADER_BYTES + 4);
  t.is(t.throws(() => decodeJobRecord(cut), { instanceOf: JobsError })?.code, 'corrupt_record');
});

test('setting the attempts of a record of format 0 writes the current format; of the current format, in place', (t) => {
  const legacy = formatZero({ ...pending, state: 'running', seq: Buffer.alloc(12, 1), lock: 'ab'.repeat(16) });
  const counted = withAttempts(legacy, 2);
  t.not(counted, legacy);
  t.is(recordDataOffset(counted), RECORD_HEADER_BYTES);
  t.like(decodeJobRecord(counted), { state: 'running', attempts: 2, lock: 'ab'.repeat(16), data: pending.data });
  t.is(withAttempts(counted, 5), counted);
  t.is(recordAttempts(counted), 5);
});

test('a record of a format newer than this code is corrupt_record, and never held under a lock', (t) => {
  const running = encodeJobRecord({ ...pending, state: 'running', seq: Buffer.alloc(12), lock: 'cd'.repeat(16) });
  const newer = Buffer.from(running);
  newer[0] = 0x20 | ((newer[0] as number) & 0x0f);
  const error = t.throws(() => decodeJobRecord(newer), { instanceOf: JobsError });
  t.is(error?.code, 'corrupt_record');
  t.regex(error?.message ?? '', /newer version/);
  t.is((t.throws(() => recordState(newer), { instanceOf: JobsError }) as JobsError).code, 'corrupt_record');
  t.true(recordRunningUnder(running, 'cd'.repeat(16)));
  t.false(recordRunningUnder(newer, 'cd'.repeat(16)));
});
