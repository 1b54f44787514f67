// The key and record encodings the jobs layer relies on: cached subspace
// prefixes, the pending-key order (priority desc, then scheduled time asc),
// versionstamp elements and the binary job record.

import test from 'ava';
import fc from 'fast-check';
import { type FdbError, FdbErrorCode, JobsError, Subspace, completeVersionstampElement, keyAfterPrefix, versionstampElement } from '@jobtree/core';
import type { TupleItem } from '@jobtree/core';
import { JobKeys, parsePendingKey, parsePendingKeyFast } from '../../packages/core/src/jobs/job-keys.js';
import { appendTupleString, writeTupleDouble } from '../../packages/core/src/keys/tuple-append.js';
import {
  decodeJobRecord,
  encodeJobRecord,
  finishedRecordBytes,
  newLock,
  RECORD_SEQ_OFFSET,
  makeRunningUnderNewLock,
  recordRunningUnder,
  updatedRecordBytes,
} from '../../packages/core/src/jobs/job-record.js';
import { versionstampFromBytes, versionstampToBytes } from '../../packages/core/src/keys/versionstamp.js';

test('a subspace packs, unpacks and bounds keys under its cached prefix', (t) => {
  const root = Subspace.of('jobs');
  const data = root.subspace('data', 'type-a');
  // Tuple strings are 0x02, the UTF-8 bytes, 0x00 (FoundationDB's tuple layer).
  const tuple = (...items: string[]) => Buffer.concat(items.map((item) => Buffer.from(`\x02${item}\x00`, 'latin1')));
  t.deepEqual(data.prefix, tuple('jobs', 'data', 'type-a'));
  const key = data.pack(['id-1']);
  t.deepEqual(key, tuple('jobs', 'data', 'type-a', 'id-1'));
  t.deepEqual(data.unpack(key), ['id-1']);
  t.true(data.contains(key));
  t.false(root.subspace('data', 'type-b').contains(key));
  t.is(t.throws<FdbError>(() => root.subspace('other').unpack(key))?.code, FdbErrorCode.key_outside_legal_range);
  const { begin, end } = data.range();
  t.true(Buffer.compare(begin, key) < 0 && Buffer.compare(key, end) < 0);
  t.is(data.range(), data.range(), 'the range is computed once');
});

test('the hand-written tuple string and double encodings are byte-identical to fdb-tuple', (t) => {
  // Subspace#pack is fdb-tuple's pack behind a prefix.
  const subspace = Subspace.of('jobs', 'data', 'type');
  const prefix = subspace.prefix;
  const pack = (item: TupleItem) => new Subspace().pack([item]);
  const strings = ['', 'a', 'id-1', 'nul\u0000inside', '\u0000', 'é', '日本', '🎉x', 'a'.repeat(300)];
  for (const value of strings) t.deepEqual(appendTupleString(prefix, value), subspace.pack(value), value);
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), (value) => {
      t.deepEqual(appendTupleString(prefix, value), subspace.pack(value));
    }),
  );
  const doubles = [0, 1, 1.5, 1_700_000_000.123, Number.MAX_VALUE, Number.MIN_VALUE, -1, -0.5, -Number.MAX_VALUE, 2 ** 53];
  const encode = (value: number) => {
    const out = Buffer.alloc(11, 0xaa);
    writeTupleDouble(out, 1, value);
    return out;
  };
  for (const value of doubles) {
    const out = encode(value);
    t.deepEqual(out.subarray(1, 10), pack({ type: 'double', value }), String(value));
    t.is(out[0], 0xaa, 'nothing written before the offset');
    t.is(out[10], 0xaa, 'nothing written after the element');
  }
  fc.assert(
    fc.property(fc.double({ noNaN: true }), (value) => {
      t.deepEqual(encode(value).subarray(1, 10), pack({ type: 'double', value }));
    }),
  );
});

test('keyAfterPrefix is the first key after every key with that prefix', (t) => {
  t.deepEqual(keyAfterPrefix(Buffer.of(1, 2, 3)), Buffer.of(1, 2, 4));
  t.deepEqual(keyAfterPrefix(Buffer.of(1, 0xff, 0xff)), Buffer.of(2));
  t.is(t.throws<FdbError>(() => keyAfterPrefix(Buffer.of(0xff)))?.code, FdbErrorCode.key_outside_legal_range);
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (prefix, rest) => {
      fc.pre(prefix.some((byte) => byte !== 0xff));
      const key = Buffer.concat([prefix, rest]);
      return Buffer.compare(key, keyAfterPrefix(prefix)) < 0;
    }),
  );
});

test('pending keys sort by priority (highest first), then scheduled time, and decode back', (t) => {
  const keys = new JobKeys().forType('t');
  const entry = fc.record({
    priority: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    scheduledTime: fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), fc.double({ min: 0, max: 2 ** 40, noNaN: true })),
    id: fc.string({ minLength: 1, maxLength: 8 }),
  });
  fc.assert(
    fc.property(entry, entry, (a, b) => {
      const ka = keys.pendingKey(a.priority, a.scheduledTime, a.id);
      const kb = keys.pendingKey(b.priority, b.scheduledTime, b.id);
      const decoded = parsePendingKey(keys, ka);
      if (decoded.priority !== a.priority || decoded.scheduledTime !== a.scheduledTime || decoded.id !== a.id) {
        return false;
      }
      if (a.priority !== b.priority) return Buffer.compare(ka, kb) === (a.priority > b.priority ? -1 : 1);
      if (a.scheduledTime !== b.scheduledTime) {
        return Buffer.compare(ka, kb) === (a.scheduledTime < b.scheduledTime ? -1 : 1);
      }
      return true;
    }),
  );
  t.pass();
});

test('pending keys decode by hand exactly as the tuple decoder reads them, at every integer width', (t) => {
  const keys = new JobKeys().forType('t');
  const priorities = [0, 1, 255, 256, 65_535, 65_536, 2 ** 40, 2 ** 48 - 1, 2 ** 48, 2 ** 52 + 1, Number.MAX_SAFE_INTEGER];
  const times = [0, 1, 1.5, 1_700_000_000.25, 2 ** 40];
  const ids = ['a', 'job-1', 'a\u0000b', '\u{1F680}', 'é'];
  for (const priority of priorities) {
    for (const scheduledTime of times) {
      for (const id of ids) {
        const key = keys.pendingKey(priority, scheduledTime, id);
        const [negated, time, tupleId] = keys.pending.unpack(key);
        t.deepEqual(parsePendingKey(keys, key), { priority, scheduledTime, id });
        // The hand decoder takes every key but the rare ones (an escaped NUL, a priority over 2^48).
        const byHand = parsePendingKeyFast(keys.pending.prefix, key);
        if (id.includes('\u0000') || priority >= 2 ** 48) t.is(byHand, undefined);
        else t.deepEqual(byHand, { priority, scheduledTime, id });
        t.deepEqual([negated === 0 ? 0 : -(negated as number), time, tupleId], [priority, scheduledTime, id]);
      }
    }
  }
});

test('a pending key is byte for byte what fdb-tuple packs, NUL bytes in ids included', (t) => {
  const keys = new JobKeys().forType('t');
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), fc.double({ min: 0, max: 2 ** 40, noNaN: true })),
      fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constant('a\u0000b'), fc.constant('\u{1F680}')),
      (priority, scheduledTime, id) => {
        fc.pre(!/\p{Surrogate}/u.test(id));
        const expected = keys.pending.pack([priority === 0 ? 0 : -priority, { type: 'double', value: scheduledTime }, id]);
        return keys.pendingKey(priority, scheduledTime, id).equals(expected);
      },
    ),
  );
  t.pass();
});

test('per-type keys are cached and an activity row is addressable from its stamp', (t) => {
  const root = new JobKeys();
  t.is(root.forType('x'), root.forType('x'));
  const keys = root.forType('x');
  const element = versionstampElement(0);
  t.is(element.bytes[0], 0x33);
  t.is(keys.activityTemplate.offset, keys.activity.prefix.length + element.offset);
  const stamp = Buffer.from('00112233445566778899aabb', 'hex');
  const filled = Buffer.from(keys.activityTemplate.key);
  stamp.copy(filled, keys.activityTemplate.offset, 0, 10);
  filled.writeUInt16BE(0, keys.activityTemplate.offset + 10);
  const expected = Buffer.concat([stamp.subarray(0, 10), Buffer.of(0, 0)]);
  t.deepEqual(keys.activityKey(expected), filled, 'a row is found again from the stamp stored in its record');
  t.deepEqual(completeVersionstampElement(stamp), Buffer.concat([Buffer.of(0x33), stamp]));
});

test('job records round-trip, and a fresh sequence is left for the commit to fill', (t) => {
  const data = Buffer.from('{"a":1}');
  const pending = {
    state: 'pending' as const,
    seq: undefined,
    lock: undefined,
    resubmit: false,
    continuous: false,
    priority: 3,
    scheduledTime: 12.5,
    attempts: 0,
    outcome: undefined,
    outcomeRow: false,
    finishedAt: undefined,
    retryPolicy: false,
    traceContext: false,
    data,
  };
  t.deepEqual(decodeJobRecord(encodeJobRecord(pending)), pending);

  const lock = newLock();
  t.regex(lock, /^[0-9a-f]{32}$/);
  const seq = Buffer.from('0102030405060708090a0000', 'hex');
  const running = { ...pending, state: 'running' as const, seq, lock, resubmit: true };
  t.deepEqual(decodeJobRecord(encodeJobRecord(running)), running);

  const template = encodeJobRecord({ ...running, seq: undefined }, true);
  t.deepEqual(template.subarray(RECORD_SEQ_OFFSET, RECORD_SEQ_OFFSET + 12), Buffer.alloc(12));
  t.true(JobsError.is(t.throws(() => decodeJobRecord(Buffer.of(9))), 'corrupt_record'));
});

test('accept, update and finish rewrite record bytes exactly as encoding the changed record would', (t) => {
  for (const continuous of [false, true]) {
    for (const data of [Buffer.from('null'), Buffer.from('{"big":"' + 'x'.repeat(300) + '"}')]) {
      const pending = { state: 'pending' as const, seq: undefined, lock: undefined, resubmit: false, continuous, priority: 7, scheduledTime: 99.5, data };
      // A pending record's resubmit bit never survives an accept, whatever the stored byte says.
      const stored = encodeJobRecord(pending);
      const accepted = Buffer.from(stored);
      const lock = makeRunningUnderNewLock(accepted, 5);
      const running = { ...pending, state: 'running' as const, lock };
      t.deepEqual(accepted, encodeJobRecord({ ...running, seq: undefined }, true, 5));
      const seq = Buffer.from('0102030405060708090a0005', 'hex');
      const live = encodeJobRecord({ ...running, seq, resubmit: true });
      t.true(recordRunningUnder(live, lock));
      t.false(recordRunningUnder(live, newLock()));
      t.false(recordRunningUnder(stored, lock));
      // An update keeps lock and flags, takes a fresh sequence and maybe new data.
      t.deepEqual(updatedRecordBytes(live, undefined, 9), encodeJobRecord({ ...running, seq: undefined, resubmit: true }, true, 9));
      const progress = Buffer.from('{"p":0.5}');
      t.deepEqual(
        updatedRecordBytes(live, progress, 0),
        encodeJobRecord({ ...running, seq: undefined, resubmit: true, data: progress }, true, 0),
      );
      const finished = { ...pending, state: 'finished' as const, finishedAt: 1_700_000_000.25 };
      t.deepEqual(finishedRecordBytes(live, undefined, 1_700_000_000.25), encodeJobRecord(finished));
      const result = Buffer.from('{"ok":true}');
      t.deepEqual(finishedRecordBytes(live, result, 1_700_000_000.25), encodeJobRecord({ ...finished, data: result }));
    }
  }
});

test('the continuous flag round-trips next to resubmit, and records written without it read as one-shot', (t) => {
  const data = Buffer.from('null');
  const base = { state: 'pending' as const, seq: undefined, lock: undefined, priority: 0, scheduledTime: 1, attempts: 0, outcome: undefined, outcomeRow: false, finishedAt: undefined, retryPolicy: false, traceContext: false, data };
  for (const resubmit of [false, true]) {
    for (const continuous of [false, true]) {
      const record = { ...base, resubmit, continuous };
      t.deepEqual(decodeJobRecord(encodeJobRecord(record)), record);
    }
  }
  // A record of the earlier layout: its flags byte (offset 29) held only the resubmit bit.
  const legacy = encodeJobRecord({ ...base, resubmit: true, continuous: false });
  legacy[29] = 1;
  t.like(decodeJobRecord(legacy), { resubmit: true, continuous: false });
  legacy[29] = 0;
  t.like(decodeJobRecord(legacy), { resubmit: false, continuous: false });
});

test('keys, records and versionstamps that cannot be right throw JobsError with a stable code', (t) => {
  const code = (fn: () => unknown) => {
    const error = t.throws(fn);
    t.true(error instanceof JobsError, String(error));
    return (error as JobsError).code;
  };
  const keys = new JobKeys().forType('t');
  t.is(code(() => parsePendingKey(keys, keys.pending.pack(['not a number', 1, 'id']))), 'corrupt_record');
  const running = {
    state: 'running' as const,
    seq: Buffer.alloc(12),
    lock: newLock(),
    resubmit: false,
    continuous: false,
    priority: 0,
    scheduledTime: 1,
    data: Buffer.from('null'),
  };
  t.is(code(() => encodeJobRecord({ ...running, seq: undefined })), 'corrupt_record');
  t.is(code(() => encodeJobRecord({ ...running, lock: undefined })), 'corrupt_record');
  t.is(code(() => versionstampFromBytes(Buffer.alloc(10))), 'invalid_versionstamp');
  t.is(code(() => versionstampToBytes('not a stamp')), 'invalid_versionstamp');
  t.is(code(() => completeVersionstampElement(Buffer.alloc(11))), 'invalid_versionstamp');
});
