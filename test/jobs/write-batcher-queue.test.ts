// The write batcher's queue of calls: taken batch by batch from the front,
// with calls on a busy job passed over and kept in order, calls of a failed
// shared transaction put back at the front, and what is queued at close()
// rejected. Driven on a real embedded database.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { FdbError, JobsError, openDatabase } from '@jobtree/core';
import type { Database, Transaction } from '@jobtree/core';
import { MAX_WRITE_BATCH, WriteBatcher } from '../../packages/core/src/jobs/write-batcher.js';
import type { WriteRequest } from '../../packages/core/src/jobs/write-requests.js';

async function tempDatabase(t: ExecutionContext): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-write-batcher-queue-'));
  const database = await openDatabase({ path: dir });
  t.teardown(async () => {
    await database.close();
    await rm(dir, { recursive: true, force: true });
  });
  return database;
}

/** A call that appends `value` to the list stored under `id`, and answers with the list it wrote. */
function append(id: string, value: number, onRun?: (tx: Transaction) => void): WriteRequest<number[]> {
  return {
    scope: 'list',
    id,
    bytes: 64,
    async body(tx) {
      const key = Buffer.from(`list/${id}`);
      const before = await tx.get(key);
      onRun?.(tx);
      const list = before === undefined ? [] : (JSON.parse(before.toString()) as number[]);
      list.push(value);
      tx.set(key, Buffer.from(JSON.stringify(list)));
      return list;
    },
  };
}

async function readList(database: Database, id: string): Promise<number[]> {
  const value = await database.doTransaction((tx) => tx.get(Buffer.from(`list/${id}`)));
  return value === undefined ? [] : (JSON.parse(value.toString()) as number[]);
}

test('thousands of queued calls, many on the same jobs, settle each once and apply per job in call order', async (t) => {
  const database = await tempDatabase(t);
  const batcher = new WriteBatcher(database);
  // Several batches' worth, with the calls of 7 jobs spread through the
  // queue: each later call on a job waits for the earlier one's batch and
  // keeps its place among the calls passed over.
  const count = 3 * MAX_WRITE_BATCH + 357;
  const requests: WriteRequest<number[]>[] = [];
  for (let i = 0; i < count; i++) requests.push(append(i % 3 === 0 ? `hot${i % 7}` : `cold${i}`, i));
  const first = batcher.submitAll(requests.slice(0, 1_500));
  const second = batcher.submitAll(requests.slice(1_500));
  const outcomes = [...(await first), ...(await second)];
  t.is(outcomes.length, count);
  t.true(outcomes.every((outcome) => outcome.status === 'fulfilled'));
  for (let hot = 0; hot < 7; hot++) {
    const expected: number[] = [];
    for (let i = 0; i < count; i++) if (i % 3 === 0 && i % 7 === hot) expected.push(i);
    t.deepEqual(await readList(database, `hot${hot}`), expected);
  }
  t.deepEqual(await readList(database, 'cold1'), [1]);
  t.deepEqual(await readList(database, `cold${count - 2}`), [count - 2]);
});

test('the calls of a shared transaction that failed run again alone, ahead of the calls queued after them', async (t) => {
  const database = await tempDatabase(t);
  const batcher = new WriteBatcher(database);
  let failOnce = true;
  // A storage error that is not retryable fails the shared transaction; its
  // calls are put back at the front and each runs in a transaction of its own.
  const poisoned = append('p', 0, () => {
    if (failOnce) {
      failOnce = false;
      throw new FdbError(2000, 'injected');
    }
  });
  const batch = [append('a', 1), poisoned, append('b', 2)];
  const first = batcher.submitAll(batch);
  // Queued behind the shared transaction, on one of its jobs.
  const later = batcher.submit(append('a', 3));
  const outcomes = await first;
  t.deepEqual(
    outcomes.map((outcome) => outcome.status),
    ['fulfilled', 'fulfilled', 'fulfilled'],
  );
  t.deepEqual(await later, [1, 3]);
  t.deepEqual(await readList(database, 'b'), [2]);
  t.deepEqual(await readList(database, 'p'), [0]);
});

test('close() rejects every call still queued, also those behind calls already taken', async (t) => {
  const database = await tempDatabase(t);
  const batcher = new WriteBatcher(database);
  const many = Array.from({ length: 2 * MAX_WRITE_BATCH + 10 }, (_, i) => append(`c${i}`, i));
  const pending = batcher.submitAll(many);
  batcher.close(() => new JobsError('closed', 'closed by the test'));
  const late = batcher.submit(append('late', 1));
  const outcomes = await pending;
  const rejected = outcomes.filter((outcome) => outcome.status === 'rejected');
  // The first batch was taken at once (the batcher was idle); the rest was still queued.
  t.true(rejected.length >= MAX_WRITE_BATCH);
  t.true(rejected.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof JobsError && outcome.reason.code === 'closed'));
  const error = await t.throwsAsync(late, { instanceOf: JobsError });
  t.is(error?.code, 'closed');
});

test('a body that throws before its first await is that call\'s own outcome, not the batch\'s', async (t) => {
  const database = await tempDatabase(t);
  const batcher = new WriteBatcher(database);
  const throwing: WriteRequest<number> = {
    scope: 'list',
    id: 'x',
    bytes: 1,
    body: () => {
      throw new JobsError('not_found', 'thrown at once');
    },
  };
  const outcomes = await batcher.submitAll<unknown>([append('y', 1), throwing, append('z', 2)]);
  t.is(outcomes[0]?.status, 'fulfilled');
  t.true(outcomes[1]?.status === 'rejected' && outcomes[1].reason instanceof JobsError);
  t.is(outcomes[2]?.status, 'fulfilled');
  t.deepEqual(await readList(database, 'y'), [1]);
});
