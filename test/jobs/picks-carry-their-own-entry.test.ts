// What a pick of the pending queue hands to the take (the claim
// hash it computed passing over other batches' claims) and of the
// scheduled time a pick that ignores scheduled times reads straight from
// each entry's key; and of the key builders rewritten as byte loops (the
// activity key of a record, the data key from a pending key's id element).
// Each is checked against the general decoder or builder, on the entries
// that take every path: negative and signed-zero times, times that are not
// finite, priorities too long for the hand-written decoder, ids with NUL
// bytes, non-ASCII ids, ids on either side of the copy loop's length.

import test from 'ava';
import fc from 'fast-check';
import type { Database, Transaction } from '@jobtree/core';
import { BatchClaims } from '../../packages/core/src/jobs/accept-batcher.js';
import { JobKeys, parsePendingKey } from '../../packages/core/src/jobs/job-keys.js';
import { RECORD_HEADER_BYTES, RECORD_SEQ_OFFSET } from '../../packages/core/src/jobs/job-record.js';
import { claimKey, dequeuePending, enqueuePending, takePending } from '../../packages/core/src/jobs/pending-queue.js';
import type { DequeuedJob } from '../../packages/core/src/jobs/pending-queue.js';
import { TUPLE_DOUBLE_BYTES } from '../../packages/core/src/keys/tuple-append.js';
import { openTempJobs } from './temp-jobs.js';

const IDS = ['a', 'job-17', 'é-ü', '😀', 'x'.repeat(64), 'x'.repeat(65), 'nul\u0000inside', '\u0000', `${'y'.repeat(70)}\u0000z`];
const TIMES = [0, -0, -3.25, 17.5, 5e-324, -5e-324, 1e12, -1e300, Number.MAX_VALUE, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
/** Priorities: 0, short ones, and ones whose integer takes more bytes than the hand-written decoder reads. */
const PRIORITIES = [0, 3, 2 ** 40, 2 ** 52 + 1, Number.MAX_SAFE_INTEGER];

/** Whether a picked entry is what decoding its key and encoding its id again make. */
function decodedAlike(keys: ReturnType<JobKeys['forType']>, job: DequeuedJob): string | undefined {
  const parts = parsePendingKey(keys, job.key);
  if (job.id !== parts.id) return `id ${JSON.stringify(job.id)} against ${JSON.stringify(parts.id)}`;
  if (!Object.is(job.priority, parts.priority)) return `priority ${job.priority} against ${parts.priority}`;
  if (!Object.is(job.scheduledTime, parts.scheduledTime)) return `time ${job.scheduledTime} against ${parts.scheduledTime} (${parts.id})`;
  if (!job.recordKey.equals(keys.job(parts.id))) return `record key of ${JSON.stringify(parts.id)}`;
  if (job.idBytes !== undefined && !job.idBytes.equals(Buffer.from(parts.id))) return `id bytes of ${JSON.stringify(parts.id)}`;
  return undefined;
}

async function pickAll(database: Database, keys: ReturnType<JobKeys['forType']>, maxScheduledTime: number | undefined, count: number) {
  return database.doTransaction(async (tx: Transaction) => {
    const result = await dequeuePending(tx, keys, maxScheduledTime, count);
    for (const job of result.jobs) takePending(tx, job.key, undefined, job.claim);
    return result.jobs;
  });
}

test('with scheduled times ignored, every pick carries its entry\'s own time, priority, id and record key, whatever they are', async (t) => {
  const { database } = await openTempJobs(t);
  const keys = new JobKeys().forType('any-time');
  const entries: Array<{ id: string; priority: number; time: number }> = [];
  let n = 0;
  for (const priority of PRIORITIES) {
    for (const time of TIMES) {
      const id = `${IDS[n % IDS.length] as string}#${n}`;
      entries.push({ id, priority, time });
      n++;
    }
  }
  // Ids with a NUL at the end of the element too.
  entries.push({ id: 'tail\u0000', priority: 3, time: -0 }, { id: 'é\u0000', priority: 2 ** 40, time: Number.NaN });
  await database.doTransaction((tx) => {
    for (const { id, priority, time } of entries) enqueuePending(tx, keys, id, priority, time);
  });
  const picked = await pickAll(database, keys, undefined, entries.length + 10);
  t.is(picked.length, entries.length);
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  for (const job of picked) {
    t.is(decodedAlike(keys, job), undefined);
    const entry = byId.get(job.id);
    t.truthy(entry, job.id);
    if (entry === undefined) continue;
    t.true(Object.is(job.scheduledTime, entry.time), `${JSON.stringify(job.id)}: ${job.scheduledTime} for ${entry.time}`);
    t.is(job.priority, entry.priority);
    t.is(job.claim, undefined);
  }
  t.is(new Set(picked.map((job) => job.id)).size, entries.length);
});

test('a pick that passes over claims hands the take each entry\'s own claim hash, and never picks a claimed entry', async (t) => {
  const { database } = await openTempJobs(t);
  let run = 0;
  // What the runs covered: picks that carried a hash, and claimed entries passed over.
  let hashesCarried = 0;
  let passedOver = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ id: fc.constantFrom(...IDS), priority: fc.constantFrom(0, 3, 2 ** 52 + 1), time: fc.constantFrom(-1, 0, 5, 17.5) }), {
        minLength: 1,
        maxLength: 60,
      }),
      fc.array(fc.nat(80), { maxLength: 20 }),
      fc.constantFrom(undefined, 5, 100),
      fc.integer({ min: 1, max: 70 }),
      async (specs, claimedAt, maxScheduledTime, count) => {
        const keys = new JobKeys().forType(`claims-${run++}`);
        const entries = new Map<string, { key: Buffer; time: number }>();
        specs.forEach((spec, i) => {
          const id = `${spec.id}/${i}`;
          entries.set(id, { key: keys.pendingKey(spec.priority, spec.time, id), time: spec.time });
        });
        await database.doTransaction((tx) => {
          for (const [i, spec] of specs.entries()) enqueuePending(tx, keys, `${spec.id}/${i}`, spec.priority, spec.time);
        });
        const all = [...entries.values()];
        const claimedKeys = claimedAt.map((i) => all[i % all.length] as { key: Buffer }).map(({ key }) => key);
        const others = new Set(claimedKeys.map(claimKey));
        const shared = new Set(others);
        const claims = new BatchClaims(shared);
        const picked = await database.doTransaction(async (tx) => {
          const result = await dequeuePending(tx, keys, maxScheduledTime, count, claims);
          for (const job of result.jobs) takePending(tx, job.key, claims, job.claim);
          return result.jobs;
        });
        if (new Set(picked.map((job) => job.id)).size !== picked.length) return false;
        for (const job of picked) {
          if (decodedAlike(keys, job) !== undefined) return false;
          if (others.has(claimKey(job.key))) return false;
          if (maxScheduledTime !== undefined && job.scheduledTime > maxScheduledTime) return false;
          // The hash travels only when the pick had claims to pass over.
          if (job.claim !== (others.size > 0 ? claimKey(job.key) : undefined)) return false;
          if (!shared.has(claimKey(job.key))) return false;
          if (job.claim !== undefined) hashesCarried++;
        }
        if (all.some(({ key }) => others.has(claimKey(key)))) passedOver++;
        // Every unclaimed due entry is picked when the count allows.
        const due = all.filter(({ key, time }) => !others.has(claimKey(key)) && (maxScheduledTime === undefined || time <= maxScheduledTime));
        if (maxScheduledTime !== undefined && picked.length !== Math.min(count, due.length)) return false;
        claims.release();
        return [...shared].sort().join() === [...others].sort().join();
      },
    ),
    { numRuns: 60 },
  );
  t.true(hashesCarried > 0 && passedOver > 0, `${hashesCarried} ${passedOver}`);
});

test('the activity key of a record is the activity key of the sequence it holds, for any type and record', (t) => {
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.uint8Array({ minLength: RECORD_HEADER_BYTES, maxLength: RECORD_HEADER_BYTES + 40 }), (type, bytes) => {
      const keys = new JobKeys().forType(type);
      const record = Buffer.from(bytes);
      const expected = keys.activityKey(record.subarray(RECORD_SEQ_OFFSET, RECORD_SEQ_OFFSET + 12));
      return keys.activityKeyOfRecord(record).equals(expected);
    }),
    { numRuns: 1_000 },
  );
  t.pass();
});

test('the data key built from a pending key\'s id element is the data key of its id, on either side of the copy loop', (t) => {
  const keys = new JobKeys().forType('elements');
  for (let length = 1; length <= 140; length++) {
    for (const id of ['i'.repeat(length), `${'é'.repeat(Math.ceil(length / 2))}`, `${'n'.repeat(length)}\u0000`]) {
      for (const priority of [0, 2 ** 52 + 1]) {
        const key = keys.pendingKey(priority, 1.5, id);
        const idAt = keys.pendingPriorityPrefix(priority).length + TUPLE_DOUBLE_BYTES;
        t.deepEqual(keys.jobFromElement(key, idAt), keys.job(id), `${length}: ${JSON.stringify(id.slice(0, 4))}`);
      }
    }
  }
});
