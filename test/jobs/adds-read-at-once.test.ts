// On the embedded engine an add makes its reads (the type's timeout, shared
// by the adds of a transaction, and the job's record) at once, before any
// call of its transaction writes, and then runs whole: a batch of adds makes
// no promise per job, however many it holds. Its outcomes stay each add's
// own: a new job, an existing one, a type with no timeout.

import { createHook } from 'node:async_hooks';
import test from 'ava';
import { JobsError } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

/** Promises made while `action` runs, until it resolves. */
async function promisesMadeBy(action: () => Promise<unknown>): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made += 1;
    },
  });
  hook.enable();
  try {
    await action();
  } finally {
    hook.disable();
  }
  return made;
}

test('a transaction of adds makes no promise per job', async (t) => {
  const { jobs } = await openTempJobs(t);
  // Warm: the first transaction opens what later ones reuse.
  await jobs.addMany(T1, [{ id: 'warm' }]);
  const one = await promisesMadeBy(() => jobs.addMany(T1, [{ id: 'one' }]));
  const many = await promisesMadeBy(() => jobs.addMany(T1, Array.from({ length: 200 }, (_, i) => ({ id: `many${i}` }))));
  // The bigger commit takes lmdb's asynchronous write, a few promises more; a promise per job would be 200.
  t.true(many - one < 100, `200 adds made ${many} promises, 1 add ${one}`);
  t.is(await jobs.getJobState(T1, 'many199'), 'pending');
});

test('adds that read at once keep their own outcomes', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'old', { v: 1 });
  const outcomes = await Promise.allSettled([
    jobs.add(T1, 'new', { v: 2 }),
    jobs.add(T1, 'old', { v: 3 }),
    jobs.add('no-timeout', 'x', {}),
  ]);
  t.deepEqual(outcomes[0], { status: 'fulfilled', value: 'pending' });
  t.deepEqual(outcomes[1], { status: 'fulfilled', value: 'pending' });
  t.true(outcomes[2].status === 'rejected' && outcomes[2].reason instanceof JobsError && outcomes[2].reason.code === 'no_type_timeout');
  t.deepEqual(await jobs.getJobStates(T1, ['new', 'old']), [
    { id: 'new', state: 'pending', data: { v: 2 } },
    { id: 'old', state: 'pending', data: { v: 3 } },
  ]);
});
