// The final couch_jobs test list (couch_jobs_tests.erl), as ava tests against
// the jobs API on the embedded engine. Each test has its own database.

import test from 'ava';
import { JobsError } from '@jobtree/core';

import { RecordingDatabase } from './recording-database.js';
import { nowSeconds, openTempJobs, T1, T2 } from './temp-jobs.js';

const J1 = 'j1';
const J2 = 'j2';

test('add_remove_pending: an added job is pending with its data, and remove deletes it', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.add(T1, J1), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: null });
  t.is(await jobs.pendingCount(T1), 1);
  t.true(await jobs.remove(T1, J1));
  t.is(await jobs.getJob(T1, J1), undefined);
  t.is(await jobs.pendingCount(T1), 0);

  const data = { x: 42 };
  await jobs.add(T2, J2, data);
  t.like(await jobs.getJob(T2, J2), { state: 'pending', data });
  t.true(await jobs.remove(T2, J2));
  t.is(await jobs.accept(T2), undefined, 'a removed pending job is not accepted');
});

test('add_remove_errors: removing a missing job, bad data and a type without timeout are errors; re-adding is fine', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.false(await jobs.remove('999', 'x'));
  await t.throwsAsync(jobs.add(T1, J1, { f: () => 1 }), { instanceOf: JobsError, code: 'invalid_job_data' });
  t.is(await jobs.getJob(T1, J1), undefined, 'nothing written for bad data');
  const error = await t.throwsAsync(jobs.add('x', J1, {}));
  t.true(JobsError.is(error, 'no_type_timeout'));
  t.is(await jobs.getJob('x', J1), undefined);
  await jobs.add(T1, J1, {});
  await jobs.add(T1, J1, {});
  t.true(await jobs.remove(T1, J1));
});

test('add_with_the_same_scheduled_time: re-adding an unchanged pending job writes nothing', async (t) => {
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (db) => {
    recorder = new RecordingDatabase(db);
    return recorder;
  });
  await jobs.add(T1, J1, { a: 1 }, { scheduledTime: 100 });
  const before = recorder!.committedWrites.length;
  await jobs.add(T1, J1, { a: 1 });
  await jobs.add(T1, J1, { a: 1 }, { scheduledTime: 100 });
  t.deepEqual(recorder!.committedWrites.slice(before), [0, 0]);
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 100, data: { a: 1 } });
});

test('get_job_data_and_state: data and state are readable until the job is removed', async (t) => {
  const { jobs } = await openTempJobs(t);
  const data = { x: 42 };
  await jobs.add(T1, J1, data);
  t.deepEqual(await jobs.getJobData(T1, J1), data);
  t.is(await jobs.getJobState(T1, J1), 'pending');
  t.true(await jobs.remove(T1, J1));
  t.is(await jobs.getJobData(T1, J1), undefined);
  t.is(await jobs.getJobState(T1, J1), undefined);
});

test('resubmit_as_job_creator: add reschedules pending jobs, flags running ones and re-enqueues finished ones', async (t) => {
  const { jobs } = await openTempJobs(t);
  const data = { x: 42 };
  await jobs.add(T1, J1, data, { scheduledTime: 15 });
  await jobs.add(T1, J1, data, { scheduledTime: 16 });
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 16 });

  const job1 = await jobs.accept(T1);
  t.is(job1?.id, J1);
  t.deepEqual(job1?.data, data);
  t.is(await jobs.add(T1, J1, data, { scheduledTime: 17 }), 'running');
  t.like(await jobs.getJob(T1, J1), { state: 'running', scheduledTime: 17, resubmit: true });

  t.is(await jobs.finish(job1!), 'pending', 'the resubmit flag re-enqueues the job');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 17, resubmit: false });

  const job2 = await jobs.accept(T1);
  t.is(await jobs.finish(job2!), 'finished');
  t.like(await jobs.getJob(T1, J1), { state: 'finished', scheduledTime: 17 });
  await jobs.add(T1, J1, data, { scheduledTime: 18 });
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 18 });
});

test('basic_accept_and_finish: accept makes the job running; finish validates data and stores it', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  const job = await jobs.accept(T1);
  t.truthy(job);
  t.like(job, { type: T1, id: J1, data: {}, resubmit: false });
  t.regex(job!.lock, /^[0-9a-f]{32}$/);
  t.is(await jobs.getJobState(T1, J1), 'running');
  t.deepEqual(structuredClone(job), job, 'the handle is structured-cloneable');

  await t.throwsAsync(jobs.finish(job!, { bad: 10n }), { code: 'invalid_job_data' });
  t.is(await jobs.getJobState(T1, J1), 'running', 'a rejected finish changes nothing');
  t.is(await jobs.finish(job!, { x: 42 }), 'finished');
  t.like(await jobs.getJob(T1, J1), { state: 'finished', data: { x: 42 } });
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('accept_blocking: a blocked accept is woken by the next add, and times out without one', async (t) => {
  const { jobs } = await openTempJobs(t);
  let settled = false;
  const first = jobs.accept(T1, { timeout: 10_000 }).finally(() => {
    settled = true;
  });
  await delay(50);
  t.false(settled, 'the accept waits while the queue is empty');
  await jobs.add(T1, J1, {});
  t.is((await first)?.id, J1);

  const started = Date.now();
  t.is(await jobs.accept(T1, { timeout: 300 }), undefined, 'times out with no job');
  t.true(Date.now() - started >= 250);

  const second = jobs.accept(T1, { timeout: 10_000 });
  await delay(50);
  await jobs.add(T1, J2, {});
  t.is((await second)?.id, J2);
});

test('accept_blocking: a job scheduled in the future wakes a blocked accept when it is due, without polling', async (t) => {
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (db) => {
    recorder = new RecordingDatabase(db);
    return recorder;
  });
  await jobs.add(T1, J1, {}, { scheduledTime: Date.now() / 1000 + 1 });
  const before = recorder!.transactions;
  const job = await jobs.accept(T1, { timeout: 10_000 });
  t.is(job?.id, J1);
  t.true(recorder!.transactions - before <= 4, `accept ran ${recorder!.transactions - before} transactions`);
});

test('job_processor_update: update replaces or keeps the data, validates it, and finish may set it', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  const job = (await jobs.accept(T1))!;
  const updated = await jobs.update(job, { x: 1 });
  t.deepEqual(updated.data, { x: 1 });
  t.like(await jobs.getJob(T1, J1), { state: 'running', data: { x: 1 } });

  await jobs.update(job);
  t.like(await jobs.getJob(T1, J1), { state: 'running', data: { x: 1 } }, 'update without data keeps it');

  await jobs.update(job, { x: 2 });
  await t.throwsAsync(jobs.update(job, { y: Number.NaN }), { code: 'invalid_job_data' });
  t.like(await jobs.getJob(T1, J1), { state: 'running', data: { x: 2 } });

  t.is(await jobs.finish(job, { x: 3 }), 'finished');
  t.like(await jobs.getJob(T1, J1), { state: 'finished', data: { x: 3 } });
});

test('job_processor_update: each update moves the activity row and re-stamps watches_activity', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  const job = (await jobs.accept(T1))!;
  const afterAccept = await jobs.getActivityVersionstamp(T1);
  t.truthy(afterAccept);
  t.deepEqual(await jobs.getActiveSince(T1, afterAccept!), [J1]);
  await jobs.update(job);
  const afterUpdate = await jobs.getActivityVersionstamp(T1);
  t.true(afterUpdate! > afterAccept!);
  t.deepEqual(await jobs.getActiveJobIds(T1), [J1], 'still exactly one activity row');
  t.deepEqual(await jobs.getInactiveSince(T1, afterAccept!), [], 'the row moved past the accept stamp');
  t.deepEqual(await jobs.getActiveSince(T1, afterUpdate!), [J1]);
});

test('resubmit_enqueues_job: a worker-side resubmit makes finish enqueue the job again', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  const job1 = (await jobs.accept(T1))!;
  t.false(jobs.isResubmitted(job1));
  const flagged = await jobs.resubmit(job1, { scheduledTime: 6 });
  t.true(jobs.isResubmitted(flagged));
  t.is(await jobs.finish(job1), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 6 });
  const job2 = (await jobs.accept(T1))!;
  t.false(jobs.isResubmitted(job2));
  t.is(await jobs.finish(job2), 'finished');
  t.is(await jobs.getJobState(T1, J1), 'finished');
});

test('resubmit_finished_updates_job_data: resubmitting a finished job enqueues it with the new data, or its old data', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { v: 1 });
  await jobs.finish((await jobs.accept(T1))!);
  t.is(await jobs.resubmit(T1, J1, { data: { v: 2 } }), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: { v: 2 } });

  await jobs.finish((await jobs.accept(T1))!);
  // The final couch_jobs crashed here: resubmit without new data on a finished job.
  t.is(await jobs.resubmit(T1, J1), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: { v: 2 } });
  await t.throwsAsync(jobs.resubmit(T1, 'missing'), { code: 'not_found' });
});

test('resubmit_running_does_not_update_job_data: a running job keeps its worker data but is flagged', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { v: 1 });
  const job = (await jobs.accept(T1))!;
  t.is(await jobs.resubmit(T1, J1, { data: { v: 2 } }), 'running');
  t.like(await jobs.getJob(T1, J1), { state: 'running', data: { v: 1 }, resubmit: true });
  const updated = await jobs.update(job);
  t.true(jobs.isResubmitted(updated), 'the worker learns of the flag at its next update');
  t.is(await jobs.finish(updated), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: { v: 1 } });
});

test('resubmit_custom_schedtime: the resubmitted run is due at the given scheduled time', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {}, { scheduledTime: 7 });
  const job = (await jobs.accept(T1))!;
  await jobs.resubmit(job, { scheduledTime: 9 });
  t.is(await jobs.finish(job), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', scheduledTime: 9 });
});

test('add_pending_updates_job_data: adding an existing pending job replaces its data', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { v: 1 });
  t.is(await jobs.add(T1, J1, { v: 2 }), 'pending');
  t.deepEqual(await jobs.getJobData(T1, J1), { v: 2 });
  t.is(await jobs.pendingCount(T1), 1, 'still queued once');
  t.deepEqual((await jobs.accept(T1))?.data, { v: 2 });
});

test('add_finished_updates_job_data: adding a finished job enqueues it with the new data', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { v: 1 });
  await jobs.finish((await jobs.accept(T1))!);
  t.is(await jobs.add(T1, J1, { v: 2 }), 'pending');
  t.like(await jobs.getJob(T1, J1), { state: 'pending', data: { v: 2 } });
  t.deepEqual((await jobs.accept(T1))?.data, { v: 2 });
});

test('add_running_does_not_update_job_data: adding a running job only flags it for resubmission', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { v: 1 });
  const job = (await jobs.accept(T1))!;
  t.is(await jobs.add(T1, J1, { v: 2 }), 'running');
  t.like(await jobs.getJob(T1, J1), { state: 'running', data: { v: 1 }, resubmit: true });
  t.is(await jobs.finish(job), 'pending');
  t.deepEqual(await jobs.getJobData(T1, J1), { v: 1 });
});

test('accept_max_schedtime: accept never returns a job scheduled after maxSchedTime', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {}, { scheduledTime: 5000 });
  await jobs.add(T1, J2, {}, { scheduledTime: 3000 });
  t.is(await jobs.accept(T1, { maxSchedTime: 1000 }), undefined);
  t.is((await jobs.accept(T1, { maxSchedTime: 3000 }))?.id, J2);
  t.is(await jobs.accept(T1, { maxSchedTime: 4999 }), undefined);
  t.is((await jobs.accept(T1, { maxSchedTime: 9000 }))?.id, J1);

  const future = nowSeconds() + 3600;
  await jobs.add(T1, 'later', {}, { scheduledTime: future });
  t.is(await jobs.accept(T1), undefined, 'by default only jobs due now');
  t.is(await jobs.pendingCount(T1, { maxSchedTime: future - 1 }), 0);
  t.is(await jobs.pendingCount(T1), 1);
});

test('accept_no_schedule: noSchedule accepts every pending job whatever its schedule, and rejects maxSchedTime', async (t) => {
  const { jobs } = await openTempJobs(t);
  const ids = Array.from({ length: 25 }, () => crypto.randomUUID());
  for (const [index, id] of ids.entries()) {
    await jobs.add(T1, id, {}, { scheduledTime: index % 2 === 0 ? nowSeconds() + 3600 : 0 });
  }
  await t.throwsAsync(jobs.accept(T1, { noSchedule: true, maxSchedTime: 1 }), {
    code: 'invalid_scheduled_time',
  });
  const accepted: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const job = await jobs.accept(T1, { noSchedule: true });
    if (job) accepted.push(job.id);
  }
  t.deepEqual(accepted.sort(), [...ids].sort());
  t.is(await jobs.accept(T1, { noSchedule: true }), undefined);
});

test('enqueue_inactive: jobs not updated since a versionstamp are re-enqueued and their old worker is halted', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, { y: 1 });
  await jobs.add(T1, J2, { y: 2 });
  const stale = (await jobs.accept(T1))!;
  const lively = (await jobs.accept(T1))!;
  const since = (await jobs.getActivityVersionstamp(T1))!;
  const livelyNow = await jobs.update(lively);

  t.deepEqual(await jobs.getInactiveSince(T1, since), [stale.id]);
  t.deepEqual(await jobs.reEnqueueInactive(T1, since), [stale.id]);
  t.like(await jobs.getJob(T1, stale.id), { state: 'pending', data: stale.data });
  t.is(await jobs.getJobState(T1, lively.id), 'running');
  t.deepEqual(await jobs.getActiveJobIds(T1), [lively.id]);

  await t.throwsAsync(jobs.update(stale), { code: 'halt' });
  await t.throwsAsync(jobs.finish(stale), { code: 'halt' });
  t.is(await jobs.getJobState(T1, stale.id), 'pending', 'the halted worker changed nothing');

  const again = (await jobs.accept(T1))!;
  t.is(again.id, stale.id);
  t.not(again.lock, stale.lock);
  t.is(await jobs.finish(livelyNow), 'finished');
  t.deepEqual(await jobs.reEnqueueInactive(T1, since), [], 'nothing left that is older than the stamp');
});

test('remove_running_job: removing a running job cancels it; its worker gets halt', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  const job = (await jobs.accept(T1))!;
  const before = await jobs.getActivityVersionstamp(T1);
  t.true(await jobs.remove(T1, J1));
  t.false(await jobs.remove(T1, J1));
  t.true((await jobs.getActivityVersionstamp(T1))! > before!, 'subscribers see the removal');
  t.deepEqual(await jobs.getActiveJobIds(T1), [], 'no activity row left behind');
  const update = await t.throwsAsync(jobs.update(job));
  t.true(JobsError.is(update, 'halt'));
  await t.throwsAsync(jobs.finish(job), { code: 'halt' });
  t.is(await jobs.getJob(T1, J1), undefined);
});

test('check_get_jobs: getJobs lists jobs of one or every type with their states', async (t) => {
  const { jobs } = await openTempJobs(t);
  await jobs.add(T1, J1, {});
  await jobs.add(T2, J2, {});
  const brief = (list: { type: string; id: string; state: string }[]) =>
    list.map(({ type, id, state }) => [type, id, state]).sort();
  t.deepEqual(brief(await jobs.getJobs()), [
    [T1, J1, 'pending'],
    [T2, J2, 'pending'],
  ]);
  await jobs.accept(T1);
  t.deepEqual(brief(await jobs.getJobs()), [
    [T1, J1, 'running'],
    [T2, J2, 'pending'],
  ]);
  t.deepEqual(brief(await jobs.getJobs(T2)), [[T2, J2, 'pending']]);
  t.is(await jobs.foldJobs(T1, (count, job) => count + (job.state === 'running' ? 1 : 0), 0), 1);
  t.deepEqual(await jobs.getTypes(), [T1, T2]);
});

test('type timeouts: set, get, clear', async (t) => {
  const { jobs } = await openTempJobs(t);
  t.is(await jobs.getTypeTimeout(T1), 2);
  await jobs.setTypeTimeout('t3', 8.5);
  t.is(await jobs.getTypeTimeout('t3'), 8.5);
  t.deepEqual(await jobs.getTypes(), [T1, T2, 't3']);
  await jobs.clearTypeTimeout('t3');
  t.is(await jobs.getTypeTimeout('t3'), undefined);
  t.deepEqual(await jobs.getTypes(), [T1, T2]);
});

test('close: a blocked accept rejects with closed and later calls are refused', async (t) => {
  const { jobs } = await openTempJobs(t);
  const blocked = jobs.accept(T1, { timeout: Number.POSITIVE_INFINITY });
  await delay(50);
  await jobs.close();
  await t.throwsAsync(blocked, { code: 'closed' });
  await t.throwsAsync(jobs.add(T1, J1), { code: 'closed' });
});

test('watchActivity: the watch fires on the next state change', async (t) => {
  const { jobs } = await openTempJobs(t);
  const { versionstamp, watch } = await jobs.watchActivity(T1);
  t.is(versionstamp, undefined);
  await jobs.add(T1, J1, {});
  t.true(await watch.promise);
  t.truthy(await jobs.getActivityVersionstamp(T1));
});

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

