// A worker actor waiting in accept through the bridge dies: its wait in the
// store ends at once (the accept's signal), instead of waiting out its
// timeout and then taking, and giving back, a job nobody will run.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AcceptOptions, type Job, type Jobs, openJobs } from '@jobtree/core';
import test, { type ExecutionContext } from 'ava';
import { JobsBridge } from '../../packages/jobtree/src/app/jobs-bridge.js';

test('an owner that dies while its accept waits ends the store accept at once, so a later job is not bounced', async (t) => {
  const jobs = await jobsInTempDir(t);
  await jobs.setTypeTimeout('mail', 60);
  const underlying: Promise<Job | undefined>[] = [];
  const accept = jobs.accept.bind(jobs);
  // Watch the store accept the bridge makes on the owner's behalf.
  jobs.accept = ((type: string, options?: AcceptOptions) => {
    const taking = accept(type, options);
    underlying.push(taking);
    return taking;
  }) as typeof jobs.accept;
  const bridge = new JobsBridge(jobs);

  const waiting = bridge.accept('mail', { owner: 'worker-1', timeout: 60_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  bridge.ownerExited('worker-1');
  t.is(await waiting, undefined);
  t.is(underlying.length, 1);
  const settled = await Promise.race([underlying[0]!.then(() => 'settled'), new Promise((resolve) => setTimeout(resolve, 3_000, 'still waiting'))]);
  t.is(settled, 'settled', "the store accept ended with its owner, not after its 60 s timeout");

  await jobs.add('mail', 'm1', { to: 'a@example.com' });
  const taken = await accept('mail', { timeout: 5_000 });
  t.is(taken?.id, 'm1', 'the next worker takes the job, never bounced through the dead owner');
});

test('an accept that reaches the bridge after its owner died takes no job: the call was on its way when the owner was killed', async (t) => {
  const jobs = await jobsInTempDir(t);
  await jobs.setTypeTimeout('mail', 60);
  await jobs.add('mail', 'm1', { to: 'a@example.com' });
  const bridge = new JobsBridge(jobs);
  // An actor's calls to the core travel on a port of their own, apart from
  // the messages that tell the main thread of its death: the death can be
  // handled first.
  bridge.ownerExited('worker-1');
  t.is(await bridge.accept('mail', { owner: 'worker-1', timeout: 5_000 }), undefined);
  t.is(await jobs.getJobState('mail', 'm1'), 'pending', 'the job is left for a live worker');
  // An owner still alive takes it.
  t.is((await bridge.accept('mail', { owner: 'worker-2', timeout: 5_000 }))?.id, 'm1');
});

/** A store of its own in a temporary directory, closed and removed when the test ends. */
async function jobsInTempDir(t: ExecutionContext): Promise<Jobs> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bridge-cancel-'));
  const jobs = await openJobs({ path: dir });
  t.teardown(async () => {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  });
  return jobs;
}
