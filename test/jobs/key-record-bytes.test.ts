// Properties of the hand-made byte paths of the jobs layer: the pending key
// decoder that skips the tuple decoder, and the record rewrites that skip
// decoding and encoding a record. Each must agree with the general path for
// every input the jobs API accepts, and the key decoder must never accept a
// key that the tuple decoder reads differently.

import test from 'ava';
import fc from 'fast-check';
import { JobKeys, parsePendingKeyFast } from '../../packages/core/src/jobs/job-keys.js';
import {
  decodeJobRecord,
  encodeJobRecord,
  finishedRecordBytes,
  makeRunningUnderNewLock,
  updatedRecordBytes,
} from '../../packages/core/src/jobs/job-record.js';
import type { JobRecord, JobRecordInput } from '../../packages/core/src/jobs/job-record.js';

const keys = new JobKeys().forType('t');

/** The tuple decoder's reading of a pending key, or 'rejects'. */
function tupleReading(key: Buffer): { priority: number; scheduledTime: number; id: string } | 'rejects' {
  try {
    const [negated, scheduledTime, id, ...rest] = keys.pending.unpack(key);
    if (typeof negated !== 'number' || typeof scheduledTime !== 'number' || typeof id !== 'string' || rest.length > 0) return 'rejects';
    return { priority: negated === 0 ? 0 : -negated, scheduledTime, id };
  } catch {
    return 'rejects';
  }
}

const priorityArb = fc.oneof(fc.nat(300), fc.maxSafeNat(), fc.integer({ min: 0, max: 2 ** 48 + 5 }));
const timeArb = fc.oneof(fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }), fc.nat(), fc.constant(0));
const idArb = fc.string({ unit: 'binary', minLength: 0, maxLength: 12 });

test('the hand decoder reads every pending key the jobs API makes as the tuple decoder does, or leaves it to it', (t) => {
  fc.assert(
    fc.property(priorityArb, timeArb, idArb, (priority, scheduledTime, id) => {
      const key = keys.pendingKey(priority, scheduledTime, id);
      const fast = parsePendingKeyFast(keys.pending.prefix, key);
      if (fast === undefined) return true;
      t.deepEqual(fast, tupleReading(key));
      return true;
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('the hand decoder accepts no byte string under the pending prefix that the tuple decoder reads differently', (t) => {
  const element = fc.oneof(
    fc.uint8Array({ maxLength: 24 }),
    // Near-valid keys: an integer code, a double, a string code, bytes, a terminator.
    fc
      .tuple(fc.integer({ min: 0x0c, max: 0x1c }), fc.uint8Array({ minLength: 0, maxLength: 8 }), fc.uint8Array({ minLength: 8, maxLength: 8 }), fc.uint8Array({ maxLength: 8 }))
      .map(([code, int, double, text]) => Uint8Array.from([code, ...int, 0x21, ...double, 0x02, ...text, 0x00])),
  );
  fc.assert(
    fc.property(element, (tail) => {
      const key = Buffer.concat([keys.pending.prefix, tail]);
      const fast = parsePendingKeyFast(keys.pending.prefix, key);
      if (fast === undefined) return true;
      const tuple = tupleReading(key);
      t.deepEqual(fast, tuple, key.toString('hex'));
      return true;
    }),
    { numRuns: 10_000 },
  );
  t.pass();
});

const dataArb = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }).map((text) => Buffer.from(JSON.stringify(text))),
  fc.nat(200_000).map((size) => Buffer.from(JSON.stringify('x'.repeat(size)))),
);

test('accept, update and finish rewrite any record the jobs layer stores exactly as decoding and encoding it would', (t) => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.boolean(),
      fc.maxSafeNat(),
      timeArb,
      dataArb,
      fc.option(dataArb, { nil: undefined }),
      fc.nat(999),
      (continuous, resubmit, priority, scheduledTime, data, newData, userVersion) => {
        const pending: JobRecordInput = { state: 'pending', seq: undefined, lock: undefined, resubmit: false, continuous, priority, scheduledTime, data };
        const storedPending = encodeJobRecord(pending);
        const accepted = Buffer.from(storedPending);
        const lock = makeRunningUnderNewLock(accepted, userVersion);
        const running: JobRecord = { ...decodeJobRecord(storedPending), state: 'running', seq: undefined, lock, resubmit: false };
        t.deepEqual(accepted, encodeJobRecord(running, true, userVersion));
        const seq = Buffer.alloc(12, 7);
        seq.writeUInt16BE(userVersion, 10);
        const storedRunning = encodeJobRecord({ ...running, seq, resubmit });
        const live = decodeJobRecord(storedRunning);
        t.deepEqual(
          updatedRecordBytes(storedRunning, newData, userVersion),
          encodeJobRecord({ ...live, seq: undefined, data: newData ?? live.data }, true, userVersion),
        );
        if (!resubmit) {
          const finished: JobRecord = {
            ...live,
            state: 'finished',
            seq: undefined,
            lock: undefined,
            resubmit: false,
            finishedAt: 1_700_000_000.5,
            data: newData ?? live.data,
          };
          t.deepEqual(finishedRecordBytes(storedRunning, newData, 1_700_000_000.5), encodeJobRecord(finished));
        }
        return true;
      },
    ),
    { numRuns: 120 },
  );
  t.pass();
});
