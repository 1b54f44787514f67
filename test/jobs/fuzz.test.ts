// A fast-check fuzz test over every public argument of the jobs API: any
// value in any position gets a result or a JobsError (never a TypeError or
// a storage error), calls still waiting at close() end with `closed`, and
// the store reopens with consistent indexes (one queue entry per pending
// job, one activity row per running job, nothing else).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { JobsError, openJobs } from '@jobtree/core';
import type { Job, Jobs, Transaction } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { decodeJobRecord } from '../../packages/core/src/jobs/job-record.js';

const TYPES = ['t1', 't2'];
const IDS = ['a', 'b', 'c', 'd'];
const STAMP = '0'.repeat(24);

/** A stand-in for one of the run's real job handles, resolved when the call is made. */
interface HandleRef {
  handle: number;
}
const HANDLE = Symbol('handle');

const typeArb = fc.oneof(fc.constantFrom(...TYPES), fc.constantFrom(...TYPES), fc.anything());
const idArb = fc.oneof(fc.constantFrom(...IDS), fc.constantFrom(...IDS), fc.anything());
const handleArb = fc.oneof(
  fc.nat(3).map((handle): HandleRef & { [HANDLE]: true } => ({ handle, [HANDLE]: true })),
  fc.record({ type: typeArb, id: idArb, lock: fc.oneof(fc.string(), fc.anything()) }),
  fc.anything(),
);
const numberArb = fc.oneof(fc.integer({ min: -5, max: 20 }), fc.double(), fc.anything());
const optionsArb = fc.oneof(
  fc.record(
    {
      priority: numberArb,
      scheduledTime: numberArb,
      continuous: fc.oneof(fc.boolean(), fc.anything()),
      data: fc.anything(),
      timeout: fc.oneof(fc.constantFrom(0, 5, 50), fc.anything()),
      maxSchedTime: numberArb,
      noSchedule: fc.oneof(fc.boolean(), fc.anything()),
      limit: numberArb,
      batchSize: numberArb,
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);
const stampArb = fc.oneof(fc.constant(STAMP), fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 24, maxLength: 24 }), fc.anything());
const specArb = fc.oneof(fc.record({ id: idArb, data: fc.anything(), priority: numberArb, continuous: fc.anything() }, { requiredKeys: ['id'] }), fc.anything());
const itemsArb = fc.oneof(fc.array(fc.oneof(fc.record({ job: handleArb, data: fc.anything() }, { requiredKeys: ['job'] }), fc.anything()), { maxLength: 4 }), fc.anything());

/** One call: a method of `Jobs` (or of `jobs.in(tx)`) and its arguments, each any value or a plausible one. */
const callArb = fc.oneof(
  fc.tuple(fc.constant('setTypeTimeout'), fc.tuple(typeArb, numberArb)),
  fc.tuple(fc.constantFrom('getTypeTimeout', 'clearTypeTimeout', 'getActiveJobIds', 'getActivityVersionstamp', 'watchActivity', 'getJobs'), fc.tuple(typeArb)),
  fc.tuple(fc.constant('getTypes'), fc.constant([])),
  fc.tuple(fc.constant('add'), fc.tuple(typeArb, idArb, fc.anything(), optionsArb)),
  fc.tuple(fc.constant('addMany'), fc.tuple(typeArb, fc.oneof(fc.array(specArb, { maxLength: 4 }), fc.anything()))),
  fc.tuple(fc.constantFrom('remove', 'getJobState', 'getJobData', 'getJob'), fc.tuple(typeArb, idArb)),
  fc.tuple(fc.constant('getJobStates'), fc.tuple(typeArb, fc.oneof(fc.array(idArb, { maxLength: 4 }), fc.anything()))),
  fc.tuple(fc.constant('resubmit'), fc.tuple(fc.oneof(typeArb, handleArb), fc.oneof(idArb, optionsArb), optionsArb)),
  fc.tuple(fc.constant('foldJobs'), fc.tuple(typeArb, fc.oneof(fc.func(fc.anything()), fc.anything()), fc.anything())),
  fc.tuple(fc.constant('pendingCount'), fc.tuple(typeArb, optionsArb)),
  fc.tuple(fc.constant('accept'), fc.tuple(typeArb, optionsArb)),
  fc.tuple(fc.constant('acceptMany'), fc.tuple(typeArb, numberArb, optionsArb)),
  fc.tuple(fc.constantFrom('update', 'finish'), fc.tuple(handleArb, fc.anything())),
  fc.tuple(fc.constantFrom('updateMany', 'finishMany'), fc.tuple(itemsArb)),
  fc.tuple(fc.constant('isResubmitted'), fc.tuple(handleArb)),
  fc.tuple(fc.constantFrom('getActiveSince', 'getInactiveSince'), fc.tuple(typeArb, stampArb)),
  fc.tuple(fc.constant('reEnqueueInactive'), fc.tuple(typeArb, stampArb, optionsArb)),
  fc.tuple(
    fc.constant('in'),
    fc.tuple(
      fc.constantFrom('add', 'remove', 'resubmit', 'getJobState', 'getJobData', 'getJob', 'getJobStates', 'setTypeTimeout', 'getTypeTimeout', 'update', 'finish'),
      fc.array(fc.oneof(typeArb, idArb, handleArb, optionsArb), { maxLength: 4 }),
    ),
  ),
);

function resolveArgs(args: readonly unknown[], handles: Job[]): unknown[] {
  return args.map((arg) => {
    if (typeof arg === 'object' && arg !== null && HANDLE in arg) return handles[(arg as unknown as HandleRef).handle % handles.length];
    return arg;
  });
}

/** Settles within `ms`, or reports the promise as still waiting. */
async function settleSoon(promise: Promise<unknown>, ms: number): Promise<'waiting' | { error: unknown } | { value: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const waiting = new Promise<'waiting'>((resolve) => {
    timer = setTimeout(() => resolve('waiting'), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ value }), (error: unknown) => ({ error })), waiting]);
  } finally {
    clearTimeout(timer);
  }
}

function call(jobs: Jobs, method: string, args: unknown[]): unknown {
  if (method === 'in') {
    const [inner, innerArgs] = args as [string, unknown[]];
    return jobs.database.doTransaction((tx: Transaction) => {
      const view = jobs.in(tx) as unknown as Record<string, (...values: unknown[]) => unknown>;
      return (view[inner] as (...values: unknown[]) => unknown).apply(view, innerArgs);
    });
  }
  const target = jobs as unknown as Record<string, (...values: unknown[]) => unknown>;
  return (target[method] as (...values: unknown[]) => unknown).apply(jobs, args);
}

/** Every pending record has its one queue entry and every running record its one activity row, and nothing else is there. */
async function checkIndexes(jobs: Jobs): Promise<string[]> {
  const root = new JobKeys();
  return jobs.database.doTransaction(async (tx) => {
    const problems: string[] = [];
    const [data, pending, activity] = await Promise.all(
      [root.data, root.pending, root.activity].map((subspace) => tx.getRange(subspace.range().begin, subspace.range().end)),
    );
    const expectedPending = new Set<string>();
    const expectedActivity = new Set<string>();
    for (const row of data ?? []) {
      const [type, id] = root.data.unpack(row.key) as [string, string];
      const record = decodeJobRecord(row.value);
      const keys = root.forType(type);
      if (record.state === 'pending') expectedPending.add(keys.pendingKey(record.priority, record.scheduledTime, id).toString('hex'));
      if (record.state === 'running') {
        if (!record.seq) problems.push(`running ${type}/${id} has no sequence`);
        else expectedActivity.add(`${keys.activityKey(record.seq).toString('hex')}=${id}`);
      }
    }
    const actualPending = new Set((pending ?? []).map((row) => row.key.toString('hex')));
    const actualActivity = new Set((activity ?? []).map((row) => `${row.key.toString('hex')}=${row.value.toString('utf8')}`));
    for (const key of expectedPending) if (!actualPending.has(key)) problems.push(`missing queue entry ${key}`);
    for (const key of actualPending) if (!expectedPending.has(key)) problems.push(`stray queue entry ${key}`);
    for (const row of expectedActivity) if (!actualActivity.has(row)) problems.push(`missing activity row ${row}`);
    for (const row of actualActivity) if (!expectedActivity.has(row)) problems.push(`stray activity row ${row}`);
    return problems;
  });
}

test('any argument to any jobs call gives a result or a JobsError, and the store stays consistent', async (t) => {
  t.timeout(300_000);
  let calls = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 40 }), async (script) => {
      const dir = await mkdtemp(join(tmpdir(), 'jobtree-jobs-fuzz-'));
      try {
        let jobs = await openJobs({ path: dir });
        for (const type of TYPES) await jobs.setTypeTimeout(type, 30);
        for (const id of IDS) await jobs.add('t1', id, { id });
        const handles = await jobs.acceptMany('t1', 2);
        await jobs.update(handles[0]!, { step: 1 });
        const stillWaiting: Promise<unknown>[] = [];
        for (const [method, rawArgs] of script) {
          calls += 1;
          const args = method === 'in' ? [rawArgs[0], resolveArgs(rawArgs[1] as unknown[], handles)] : resolveArgs(rawArgs, handles);
          let result: unknown;
          try {
            result = call(jobs, method, args);
          } catch (error) {
            if (!(error instanceof JobsError)) throw new Error(`${method} threw ${String(error)}`, { cause: error });
            continue;
          }
          if (!(result instanceof Promise)) continue;
          const outcome = await settleSoon(result, 100);
          if (outcome === 'waiting') {
            stillWaiting.push(result);
            continue;
          }
          if ('error' in outcome && !(outcome.error instanceof JobsError)) {
            throw new Error(`${method} rejected with ${String(outcome.error)}`, { cause: outcome.error });
          }
          const value = 'value' in outcome ? outcome.value : undefined;
          if (typeof value === 'object' && value !== null && 'watch' in value) (value as { watch: { cancel(): void } }).watch.cancel();
        }
        await jobs.close();
        for (const outcome of await Promise.allSettled(stillWaiting)) {
          if (outcome.status === 'rejected' && !JobsError.is(outcome.reason, 'closed')) {
            throw new Error(`a waiting call rejected with ${String(outcome.reason)}`);
          }
        }
        jobs = await openJobs({ path: dir });
        const problems = await checkIndexes(jobs);
        await jobs.close();
        if (problems.length > 0) throw new Error(problems.join('\n'));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: Number(process.env.JOBS_FUZZ_RUNS ?? 100) },
  );
  t.true(calls > 100);
});
