// The lock check of finish and update compares the caller's lock with the
// record's bytes digit by digit: only the exact lock the accept handed out
// (32 lower-case hex digits) owns a running job. An upper-case spelling of
// it, a lock with a character that is not a hex digit, or a longer or
// shorter one is refused, and the job stays running for its real owner.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { Job } from '@jobtree/core';
import { openTempJobs, T1 } from './temp-jobs.js';

test('finish and update refuse any lock but the exact one, and the job stays its owner\'s', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, 'locked', { n: 1 });
  const job = (await jobs.accept(T1)) as Job;
  t.truthy(job);
  t.regex(job.lock, /^[0-9a-f]{32}$/);
  const lower = job.lock;
  // A lock with a letter (a-f) in it, so that its upper-case spelling differs.
  const upper = lower.toUpperCase();
  const notHex = `${lower.slice(0, 31)}g`;
  // The same digits with one changed by the case-folding distance of ASCII letters (0x20): '0' -> 'P' is not hex either.
  const shifted = lower.replace(/[0-9]/, (digit) => String.fromCharCode(digit.charCodeAt(0) + 0x20));
  const candidates = [notHex, `${lower}0`, lower.slice(0, 31), ''];
  for (const variant of [upper, shifted]) if (variant !== lower) candidates.push(variant);
  for (const lock of candidates) {
    const forged = { ...job, lock };
    const finish = await t.throwsAsync(jobs.finish(forged), undefined, `finish with lock ${JSON.stringify(lock)}`);
    t.true(finish instanceof JobsError, String(finish));
    const update = await t.throwsAsync(jobs.update(forged), undefined, `update with lock ${JSON.stringify(lock)}`);
    t.true(update instanceof JobsError, String(update));
  }
  t.is(await jobs.getJobState(T1, 'locked'), 'running');
  t.is(await jobs.finish(job), 'finished');
});
