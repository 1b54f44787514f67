// Every options object of @jobtree/core refuses a key it does not know,
// naming the key (and, when one is close, the option meant), instead of
// ignoring it: `{ delay: 5000 }` must not add a job that runs now. Known
// keys with valid values keep working. Storage keeps FoundationDB's error
// for a bad option (`invalid_option_value`, 2006); the jobs API says
// `invalid_option`.

import test from 'ava';
import fc from 'fast-check';
import { FdbError, FdbErrorCode, Jobs, JobsError, LocalQueue, ZERO_VERSIONSTAMP, openDatabase, openJobs } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

type Options = Record<string, unknown>;

interface OptionsSite {
  name: string;
  known: readonly string[];
  /** Calls the API with `options` (merged into what the call needs); rejects as the API does. */
  call(options: Options): Promise<unknown>;
  /** Options made only of known keys with valid values: the call succeeds. */
  valid?: fc.Arbitrary<Options>;
  /** Whether `error` is this site's error for a bad option. */
  refuses(error: unknown): boolean;
}

const jobsRefusal = (error: unknown): boolean => error instanceof JobsError && error.code === 'invalid_option';
const storageRefusal = (error: unknown): boolean => error instanceof FdbError && error.code === FdbErrorCode.invalid_option_value;

/** Keys people try, and random ones. */
function unknownKey(known: readonly string[]): fc.Arbitrary<string> {
  const tried = fc.constantFrom('delay', 'attempts', 'tx', 'concurrency', 'timeoutMs', 'retries', 'prority', 'limt', '__proto__', 'constructor');
  return fc.oneof(tried, fc.string({ minLength: 1, maxLength: 12 })).filter((key) => !known.includes(key));
}
const anyValue = fc.anything().filter((value) => value !== undefined);

const seconds = fc.integer({ min: 0, max: 4_000_000_000 });
const addOptions = fc.record({ scheduledTime: seconds, priority: fc.nat(1_000), continuous: fc.boolean() }, { requiredKeys: [] });

async function sites(t: Parameters<typeof openTempJobs>[0]): Promise<OptionsSite[]> {
  const { jobs, database, dir } = await openTempJobs(t);
  await jobs.add(T1, 'worked');
  const job = (await jobs.accept(T1)) as Job;
  let next = 0;
  const fresh = (): string => `j${next++}`;
  const inTx = <R>(body: (view: ReturnType<Jobs['in']>) => Promise<R>): Promise<R> => database.doTransaction((tx) => body(jobs.in(tx)));
  const outcome = async (settled: Promise<{ status: string; reason?: Error }[]>): Promise<void> => {
    const [first] = await settled;
    if (first?.status === 'rejected') throw first.reason;
  };
  return [
    {
      name: 'openDatabase',
      known: ['path', 'clusterFile', 'directory'],
      call: async (options) => (await openDatabase({ path: dir, ...options })).close(),
      refuses: storageRefusal,
    },
    {
      name: 'doTransaction',
      known: ['retryLimit'],
      call: (options) => database.doTransaction(() => undefined, options),
      valid: fc.record({ retryLimit: fc.nat(10) }, { requiredKeys: [] }),
      refuses: storageRefusal,
    },
    {
      name: 'getRange',
      known: ['limit', 'reverse'],
      call: (options) => database.doTransaction((tx) => tx.getRange(Buffer.from('a'), Buffer.from('b'), options)),
      valid: fc.record({ limit: fc.nat(10), reverse: fc.boolean() }, { requiredKeys: [] }),
      refuses: storageRefusal,
    },
    {
      name: 'openJobs',
      known: ['path', 'clusterFile', 'directory', 'database'],
      call: async (options) => (await openJobs({ database, ...options } as never)).close(),
      refuses: jobsRefusal,
    },
    {
      name: 'new Jobs',
      known: ['ownsDatabase'],
      call: async (options) => new Jobs(database, { ownsDatabase: false, ...options }).close(),
      refuses: jobsRefusal,
    },
    {
      name: 'add',
      known: ['scheduledTime', 'priority', 'continuous'],
      call: (options) => jobs.add(T1, fresh(), {}, options),
      valid: addOptions,
      refuses: jobsRefusal,
    },
    {
      name: 'addMany',
      known: ['id', 'data', 'scheduledTime', 'priority', 'continuous'],
      call: (options) => jobs.addMany(T1, [{ id: fresh(), ...options }]),
      valid: addOptions,
      refuses: jobsRefusal,
    },
    {
      name: 'resubmit',
      known: ['data', 'scheduledTime', 'priority', 'continuous'],
      call: (options) => jobs.resubmit(T1, 'worked', options),
      valid: addOptions,
      refuses: jobsRefusal,
    },
    {
      name: "a worker's resubmit",
      known: ['scheduledTime', 'priority'],
      call: (options) => jobs.resubmit(job, options),
      valid: fc.record({ scheduledTime: seconds, priority: fc.nat(1_000) }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
    {
      name: 'accept',
      known: ['timeout', 'maxSchedTime', 'noSchedule', 'signal'],
      call: (options) => jobs.accept('t2', options),
      valid: fc.record({ maxSchedTime: seconds, timeout: fc.constant(0) }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
    {
      name: 'acceptMany',
      known: ['timeout', 'maxSchedTime', 'noSchedule', 'signal'],
      call: (options) => jobs.acceptMany('t2', 2, options),
      valid: fc.record({ noSchedule: fc.boolean(), timeout: fc.constant(0) }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
    {
      name: 'pendingCount',
      known: ['maxSchedTime', 'limit'],
      call: (options) => jobs.pendingCount(T1, options),
      valid: fc.record({ maxSchedTime: seconds, limit: fc.nat(10) }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
    {
      name: 'reEnqueueInactive',
      known: ['batchSize'],
      call: (options) => jobs.reEnqueueInactive('t2', ZERO_VERSIONSTAMP, options),
      valid: fc.record({ batchSize: fc.integer({ min: 1, max: 10 }) }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
    {
      name: 'an item of updateMany',
      known: ['job', 'data'],
      call: (options) => outcome(jobs.updateMany([{ job, ...options }])),
      refuses: jobsRefusal,
    },
    {
      name: 'an item of finishMany',
      known: ['job', 'data'],
      // Never a valid call here: finishing would take the job away from the other sites.
      call: (options) => outcome(jobs.finishMany([{ job: { ...job, lock: 'not-the-lock' }, ...options }])),
      refuses: jobsRefusal,
    },
    {
      name: 'in(tx).add',
      known: ['scheduledTime', 'priority', 'continuous'],
      call: (options) => inTx((view) => view.add(T1, fresh(), {}, options)),
      valid: addOptions,
      refuses: jobsRefusal,
    },
    {
      name: 'in(tx).resubmit',
      known: ['data', 'scheduledTime', 'priority', 'continuous'],
      call: (options) => inTx((view) => view.resubmit(T1, 'worked', options)),
      valid: addOptions,
      refuses: jobsRefusal,
    },
    {
      name: 'LocalQueue',
      known: ['size', 'holdMs', 'noSchedule'],
      call: async (options) => new LocalQueue(jobs, 't2', options).stop(),
      valid: fc.record({ size: fc.integer({ min: 1, max: 100 }), holdMs: fc.integer({ min: 1, max: 10_000 }), noSchedule: fc.boolean() }, { requiredKeys: [] }),
      refuses: jobsRefusal,
    },
  ];
}

test('every options object of the jobs and storage API refuses an unknown key, naming it', async (t) => {
  t.timeout(120_000);
  for (const site of await sites(t)) {
    await fc.assert(
      fc.asyncProperty(unknownKey(site.known), anyValue, async (key, value) => {
        const error = await site.call(Object.fromEntries([[key, value]])).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        if (!site.refuses(error)) throw new Error(`${site.name} { ${JSON.stringify(key)} } gave ${String(error)}`);
        if (!(error as Error).message.includes(JSON.stringify(key))) {
          throw new Error(`${site.name}'s refusal does not name ${JSON.stringify(key)}: ${(error as Error).message}`);
        }
      }),
      { numRuns: 40 },
    );
    t.pass(site.name);
  }
});

test('known keys with valid values still work everywhere', async (t) => {
  t.timeout(120_000);
  for (const site of await sites(t)) {
    if (site.valid === undefined) continue;
    await fc.assert(
      fc.asyncProperty(site.valid, async (options) => {
        await site.call(options);
      }),
      { numRuns: 20 },
    );
    t.pass(site.name);
  }
});

test('an unknown key names the option that was meant: a near name, or the right place for it', async (t) => {
  const { jobs, database } = await openTempJobs(t);
  const refusal = async (call: Promise<unknown>): Promise<string> => {
    const error = await t.throwsAsync(call, { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option');
    return error?.message ?? '';
  };
  t.regex(await refusal(jobs.add(T1, 'a', {}, { prority: 5 } as never)), /"prority".*priority/);
  t.regex(await refusal(jobs.add(T1, 'a', {}, { delay: 5000 } as never)), /"delay".*scheduledTime.*seconds/);
  t.regex(await refusal(jobs.add(T1, 'a', {}, { attempts: 5 } as never)), /"attempts".*process\(.*attempts/);
  t.regex(await refusal(jobs.add(T1, 'a', {}, { tx: {} } as never)), /"tx".*app\.in\(tx\)\.add\(/);
  t.regex(await refusal(jobs.addMany(T1, [{ id: 'a', delay: 5 } as never])), /"delay".*scheduledTime/);
  t.regex(await refusal(jobs.accept(T1, { timeoutMs: 10 } as never)), /"timeoutMs".*timeout/);
  t.regex(await refusal(jobs.pendingCount(T1, { limt: 1 } as never)), /"limt".*limit/);
  t.is(await jobs.pendingCount(T1), 0, 'nothing was added');
  const storage = await t.throwsAsync(database.doTransaction(() => 1, { retrylimit: 1 } as never), { instanceOf: FdbError });
  t.regex(storage?.message ?? '', /"retrylimit".*retryLimit/);
});

test('a key whose value is undefined counts as absent', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.add(T1, 'a', {}, { delay: undefined } as never), 'pending');
  t.is(await jobs.pendingCount(T1, { limit: undefined, bogus: undefined } as never), 1);
});

test('openJobs and openDatabase refuse an unknown key before they open anything', async (t) => {
  const error = await t.throwsAsync(openJobs({ path: '/nonexistent/never-created', create: true } as never), { instanceOf: JobsError });
  t.regex(error?.message ?? '', /"create"/);
  const storage = await t.throwsAsync(openDatabase({ path: '/nonexistent/never-created', readOnly: true } as never), { instanceOf: FdbError });
  t.regex(storage?.message ?? '', /"readOnly"/);
});
