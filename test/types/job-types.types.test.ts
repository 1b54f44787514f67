// Typed job types by declaration merging: a declared type's data flows into
// add, accept, getJobData, update and subscription events, with no generics
// at the call sites; undeclared types keep JsonValue. The type assertions
// are checked by `tsc` (part of `pnpm test`); the ava test below runs the
// same calls, so the file also proves they work at run time.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Job, JobDataOf, JsonValue } from '@jobtree/core';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';

declare module '@jobtree/core' {
  interface JobTypes {
    'typed:email': { to: string; subject?: string };
  }
}

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_: T): void {}

assertType<Equal<JobDataOf<'typed:email'>, { to: string; subject?: string }>>(true);
assertType<Equal<JobDataOf<'anything-else'>, JsonValue>>(true);
assertType<Equal<JobDataOf<string>, JsonValue>>(true);

test('a declared job type types add, accept, update, getJobData and subscription events', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-types-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const jobs = await openJobs({ path: join(dir, 'jobs') });
  await jobs.setTypeTimeout('typed:email', 30);
  await jobs.add('typed:email', 'a', { to: 'ada@example.com' });
  // @ts-expect-error: `to` must be a string for a declared type (checked by tsc only; never called)
  void (() => jobs.add('typed:email', 'b', { to: 42 }));
  await jobs.setTypeTimeout('loose', 30);
  await jobs.add('loose', 'c', { anything: [1, 'two'] });

  const job = await jobs.accept('typed:email');
  if (job === undefined) return t.fail('no job');
  assertType<Equal<typeof job, Job<'typed:email'>>>(true);
  const to: string = job.data.to;
  t.is(to, 'ada@example.com');
  const updated = await jobs.update(job, { to: 'ada@example.com', subject: 'hi' });
  t.is(updated.data.subject, 'hi');
  // @ts-expect-error: update's data is the declared type too
  void (() => jobs.update(job, { subject: 'no recipient' }));
  await jobs.finish(updated);

  const data = await jobs.getJobData('typed:email', 'a');
  assertType<Equal<typeof data, { to: string; subject?: string } | undefined>>(true);
  const loose = await jobs.getJobData('loose', 'c');
  assertType<Equal<typeof loose, JsonValue | undefined>>(true);
  t.deepEqual(loose, { anything: [1, 'two'] });
  await jobs.close();

  const app = await startJobs({ path: join(dir, 'app'), threads: 1 });
  t.teardown(() => app.close());
  await app.setTypeTimeout('typed:email', 30);
  await app.add('typed:email', 'd', { to: 'bob@example.com' });
  const sub = await app.subscribe('typed:email', 'd');
  const subData = sub.data;
  assertType<Equal<typeof subData, { to: string; subject?: string } | undefined>>(true);
  const accepted = await app.accept('typed:email');
  await app.finish(accepted!);
  const event = await app.wait(sub, 'finished', 10_000);
  if (event === 'timeout') return t.fail('no event');
  assertType<Equal<typeof event.data, { to: string; subject?: string } | undefined>>(true);
  t.is(event.state, 'finished');
});
