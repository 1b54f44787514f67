// Bad input gets a JobsError with a stable code, and nothing is written.

import test from 'ava';
import { JobsError, MAX_ID_BYTES, MAX_JOB_DATA_BYTES, MAX_TYPE_BYTES } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { encodeJobData } from '../../packages/core/src/jobs/job-data.js';
import { openTempJobs, T1 } from './temp-jobs.js';

const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;

const notJson: [string, unknown][] = [
  ['a function', () => 1],
  ['a nested function', { f() {} }],
  ['a cycle', cyclic],
  ['a BigInt', { n: 1n }],
  ['a symbol', { s: Symbol('x') }],
  ['a nested undefined', { u: undefined }],
  ['undefined in an array', [1, undefined]],
  // biome-ignore lint/suspicious/noSparseArray: the case under test
  ['a sparse array', [1, , 3]],
  ['NaN', { n: Number.NaN }],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['a Map', new Map([[1, 2]])],
  ['a class instance', new (class Point {})()],
  // These two have a toJSON method: they would be stored, but read back as something else.
  ['a Date', { at: new Date(0) }],
  ['an object with toJSON', { toJSON: () => 'stand-in' }],
  ['too large', { s: 'x'.repeat(MAX_JOB_DATA_BYTES) }],
];

for (const [name, data] of notJson) {
  test(`add rejects job data that is not JSON: ${name}`, async (t) => {
    const { jobs } = await openTempJobs(t);
    const error = await t.throwsAsync(jobs.add(T1, 'j', data), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_job_data');
    t.is(await jobs.getJob(T1, 'j'), undefined);
  });
}

test('encodeJobData rejects undefined at the top and accepts plain JSON', (t) => {
  t.throws(() => encodeJobData(undefined), { code: 'invalid_job_data' });
  t.is(encodeJobData({ a: [1, 'x', null, true, { b: 2.5 }] }).toString(), '{"a":[1,"x",null,true,{"b":2.5}]}');
  t.is(encodeJobData(Object.create(null)).toString(), '{}');
});

test('types and ids must be non-empty strings within their byte limits', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const type of ['', 'x'.repeat(MAX_TYPE_BYTES + 1), 42, undefined, null]) {
    await t.throwsAsync(jobs.add(type as string, 'j'), { code: 'invalid_job_type' });
    await t.throwsAsync(jobs.setTypeTimeout(type as string, 5), { code: 'invalid_job_type' });
    await t.throwsAsync(jobs.accept(type as string), { code: 'invalid_job_type' });
  }
  for (const id of ['', 'é'.repeat(MAX_ID_BYTES / 2 + 1), 7, {}]) {
    await t.throwsAsync(jobs.add(T1, id as string), { code: 'invalid_job_id' });
    await t.throwsAsync(jobs.remove(T1, id as string), { code: 'invalid_job_id' });
  }
  await jobs.add(T1, 'é'.repeat(MAX_ID_BYTES / 2), {});
  t.is(await jobs.pendingCount(T1), 1, 'the longest valid id works');
});

test('ids and types with a lone surrogate are refused: they would share a key with U+FFFD', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const id of ['\uD800', 'a\uDC00b', 'x\uD83D']) {
    await t.throwsAsync(jobs.add(T1, id, {}), { code: 'invalid_job_id' });
  }
  await t.throwsAsync(jobs.setTypeTimeout('t\uDFFF', 5), { code: 'invalid_job_type' });
  t.deepEqual(await jobs.getJobs(T1), []);
  // A well-formed pair is fine and reads back as written.
  await jobs.add(T1, 'rocket-\u{1F680}', {});
  t.deepEqual(
    (await jobs.getJobs(T1)).map((job) => job.id),
    ['rocket-\u{1F680}'],
  );
});

test('resubmit with something that is neither a type nor a job handle is invalid_job_type', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.resubmit(42 as unknown as string, 'j'), { code: 'invalid_job_type' });
  await t.throwsAsync(jobs.resubmit(undefined as unknown as string, 'j'), { code: 'invalid_job_type' });
});

test('pendingCount limit must be an integer >= 0 or Infinity', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {});
  for (const limit of [-1, 2.5, Number.NaN, '3']) {
    await t.throwsAsync(jobs.pendingCount(T1, { limit: limit as number }), { code: 'invalid_option' });
  }
  t.is(await jobs.pendingCount(T1, { limit: Number.POSITIVE_INFINITY }), 1);
  t.is(await jobs.pendingCount(T1, { limit: 0 }), 0);
});

test('options that are not objects give invalid_option, not a TypeError', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {});
  const job = (await jobs.accept(T1))!;
  for (const bad of [null, 5, 'x', [1]]) {
    const options = bad as never;
    await t.throwsAsync(jobs.add(T1, 'k', {}, options), { code: 'invalid_option' });
    await t.throwsAsync(jobs.resubmit(T1, 'j', options), { code: 'invalid_option' });
    await t.throwsAsync(jobs.resubmit(job, options), { code: 'invalid_option' });
    await t.throwsAsync(jobs.accept(T1, options), { code: 'invalid_option' });
    await t.throwsAsync(jobs.pendingCount(T1, options), { code: 'invalid_option' });
    await t.throwsAsync(jobs.reEnqueueInactive(T1, '0'.repeat(24), options), { code: 'invalid_option' });
  }
  t.is(await jobs.getJob(T1, 'k'), undefined);
  t.like(await jobs.getJob(T1, 'j'), { state: 'running', resubmit: false });
});

test('a type without a timeout is refused, and nothing is written', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.add('untimed', 'j', {}), { code: 'no_type_timeout' });
  t.deepEqual(await jobs.getJobs('untimed'), []);
  await jobs.setTypeTimeout('untimed', 1);
  await jobs.add('untimed', 'j', {});
  await jobs.clearTypeTimeout('untimed');
  await t.throwsAsync(jobs.add('untimed', 'k', {}), { code: 'no_type_timeout' });
});

test('priorities must be integers >= 0 and scheduled times finite and >= 0', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const priority of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3', 2 ** 60]) {
    await t.throwsAsync(jobs.add(T1, 'j', {}, { priority: priority as number }), { code: 'invalid_priority' });
  }
  for (const scheduledTime of [Number.NaN, Number.POSITIVE_INFINITY, -1, '10']) {
    await t.throwsAsync(jobs.add(T1, 'j', {}, { scheduledTime: scheduledTime as number }), {
      code: 'invalid_scheduled_time',
    });
  }
  await t.throwsAsync(jobs.accept(T1, { maxSchedTime: Number.NaN }), { code: 'invalid_scheduled_time' });
  t.is(await jobs.getJob(T1, 'j'), undefined);
});

test('a scheduled time in milliseconds is refused wherever a job is scheduled, with a message that says seconds', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  await jobs.add(T1, 'running', {});
  const job = (await jobs.accept(T1))!;
  await jobs.add(T1, 'pending', {}, { scheduledTime: 1 });
  const ms = Date.now();
  const calls: [string, () => Promise<unknown>][] = [
    ['add', () => jobs.add(T1, 'new', {}, { scheduledTime: ms })],
    ['addMany', () => jobs.addMany(T1, [{ id: 'new', scheduledTime: ms }])],
    ['resubmit', () => jobs.resubmit(T1, 'pending', { scheduledTime: ms })],
    ["a worker's resubmit", () => jobs.resubmit(job, { scheduledTime: ms })],
    ['in(tx).add', () => database.doTransaction((tx) => jobs.in(tx).add(T1, 'new', {}, { scheduledTime: ms }))],
    ['in(tx).resubmit', () => database.doTransaction((tx) => jobs.in(tx).resubmit(T1, 'pending', { scheduledTime: ms }))],
  ];
  for (const [name, call] of calls) {
    const error = await t.throwsAsync(call(), { instanceOf: JobsError }, name);
    t.is(error?.code, 'invalid_scheduled_time', name);
    t.regex(error?.message ?? '', /epoch seconds.*milliseconds/, name);
  }
  t.is(await jobs.getJob(T1, 'new'), undefined);
  t.like(await jobs.getJob(T1, 'pending'), { scheduledTime: 1 });
  t.like(await jobs.getJob(T1, 'running'), { resubmit: false });
  // The last time that can be seconds (year 5138) is still taken as seconds.
  t.is(await jobs.add(T1, 'far', {}, { scheduledTime: 1e11 }), 'pending');
  await t.throwsAsync(jobs.add(T1, 'farther', {}, { scheduledTime: 1e11 + 1 }), { code: 'invalid_scheduled_time' });
});

test('a Date is taken as a scheduled time, converted to epoch seconds', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const at = new Date(Date.UTC(2100, 0, 1));
  const seconds = at.getTime() / 1000;
  await jobs.add(T1, 'a', {}, { scheduledTime: at });
  await jobs.addMany(T1, [{ id: 'b', scheduledTime: at }]);
  await database.doTransaction((tx) => jobs.in(tx).add(T1, 'c', {}, { scheduledTime: at }));
  await jobs.add(T1, 'd', {});
  await jobs.resubmit(T1, 'd', { scheduledTime: at });
  for (const id of ['a', 'b', 'c', 'd']) t.like(await jobs.getJob(T1, id), { scheduledTime: seconds }, id);
  t.is(await jobs.pendingCount(T1, { maxSchedTime: seconds - 1 }), 0, 'none is due before it');
  await t.throwsAsync(jobs.add(T1, 'e', {}, { scheduledTime: new Date(Number.NaN) }), { code: 'invalid_scheduled_time' });
  await t.throwsAsync(jobs.add(T1, 'e', {}, { scheduledTime: new Date(-1000) }), { code: 'invalid_scheduled_time' });
});

test('timeouts must be positive numbers', async (t) => {
  const { jobs } = await openTempJobs(t);
  for (const seconds of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '5']) {
    await t.throwsAsync(jobs.setTypeTimeout(T1, seconds as number), { code: 'invalid_timeout' });
  }
  t.is(await jobs.getTypeTimeout(T1), 2, 'unchanged');
  await t.throwsAsync(jobs.accept(T1, { timeout: -5 }), { code: 'invalid_timeout' });
});

test('worker calls with a forged or foreign handle are refused', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'j', {});
  const job = (await jobs.accept(T1))!;
  const forged: Job = { ...job, lock: '0'.repeat(32) };
  await t.throwsAsync(jobs.update(forged), { code: 'halt' });
  await t.throwsAsync(jobs.finish(forged), { code: 'halt' });
  await t.throwsAsync(jobs.resubmit(forged), { code: 'halt' });
  await t.throwsAsync(jobs.update(null as unknown as Job), { code: 'invalid_option' });
  t.is(await jobs.getJobState(T1, 'j'), 'running');
  t.is(await jobs.finish(job), 'finished');
  await t.throwsAsync(jobs.finish(job), { code: 'halt' }, 'finishing twice is refused');
});

test('activity calls check their versionstamps', async (t) => {
  const { jobs } = await openTempJobs(t);
  await t.throwsAsync(jobs.getInactiveSince(T1, 'nope'), { code: 'invalid_versionstamp' });
  await t.throwsAsync(jobs.reEnqueueInactive(T1, '0'.repeat(24), { batchSize: 0 }), { code: 'invalid_option' });
});
