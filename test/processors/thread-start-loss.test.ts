// Handler threads that exit while they start. piscina starts no thread of
// its own once one of its threads exited before it was ready: the handler
// threads start the ones their lanes wait for, after a wait that grows while
// threads keep exiting that way, and the jobs those threads took down are
// lost like those of any thread that dies with no culprit named.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'node:worker_threads';
import test, { type ExecutionContext } from 'ava';
import type { Scheduler } from '../../packages/jobtree/src/processors/index.js';
import { eventually, type Harness, harness, nextEvent } from './scheduler-harness.js';

/** Whether the job's waiting-marker handler is waiting in one of the scheduler's threads now. */
function waitingInAThread(scheduler: Scheduler, dir: string, id: string): boolean {
  return scheduler.threads.some((thread) => existsSync(join(dir, `${id}@${thread.threadId}`)));
}

/** A scheduler on one thread whose job `id` has started and waits in its handler there. */
async function waitingJob(t: ExecutionContext, id: string, attempts: number): Promise<{ h: Harness; scheduler: Scheduler }> {
  const h = await harness(t);
  const scheduler = await h.start('external', 'waiting-marker', { threads: 1, maxJobs: 2, attempts });
  const started = nextEvent(scheduler, 'job:started', (event) => event.id === id);
  await h.jobs.add('external', id, { dir: h.dir });
  await started;
  await eventually(() => waitingInAThread(scheduler, h.dir, id));
  return { h, scheduler };
}

test('a job whose replacement thread exits while it starts runs again in a new thread, and so does a job added after', async (t) => {
  const { h, scheduler } = await waitingJob(t, 'long', 5);
  const restarting = nextEvent(scheduler, 'threads:restarting');

  const first = scheduler.threads[0] as Worker;
  await first.terminate();
  // piscina started the replacement as the first thread exited, in the same
  // turn: the main thread has not read its ready message yet.
  const replacement = scheduler.threads.find((thread) => thread !== first);
  if (replacement === undefined) throw new Error('piscina started no replacement thread');
  await replacement.terminate();

  // The first thread, just up and no run of it ended, may be counted too; its replacement had not started.
  const event = await restarting;
  t.regex(event.reason, /exited (before it ran a job|while it started)/);
  await eventually(() => waitingInAThread(scheduler, h.dir, 'long'));
  await h.jobs.add('external', 'later', { dir: h.dir });
  await eventually(() => waitingInAThread(scheduler, h.dir, 'later'));
  t.is(scheduler.threads.length, 1);
});

test('a job on threads that keep exiting while they start fails after its attempts, and threads start again once they stop', async (t) => {
  const { h, scheduler } = await waitingJob(t, 'doomed', 1);
  const failed = nextEvent(scheduler, 'job:failed', (event) => event.id === 'doomed');
  const restarts: number[] = [];
  scheduler.events.on('threads:restarting', (event) => restarts.push(event.delayMs));

  // Every thread ends as soon as it is there, before it can have started.
  const ended = new Set<Worker>();
  const killer = setInterval(() => {
    for (const thread of scheduler.threads) {
      if (ended.has(thread)) continue;
      ended.add(thread);
      void thread.terminate();
    }
  }, 1);
  t.teardown(() => clearInterval(killer));
  const failure = await failed;
  clearInterval(killer);

  t.is(failure.attempts, 1);
  t.true(restarts.length >= 1, 'the threads said they restart late');
  // The wait before each new thread grows while they keep exiting.
  for (let i = 1; i < restarts.length; i++) t.true((restarts[i] as number) >= (restarts[i - 1] as number));
  await h.jobs.add('external', 'after', { dir: h.dir });
  await eventually(() => waitingInAThread(scheduler, h.dir, 'after'));
});

test('a handler module whose import ends every thread: each next thread starts later, and its job fails after its attempts', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('exits', 'exits-on-import', { threads: 1, maxJobs: 1, attempts: 1 });
  const delays: number[] = [];
  scheduler.events.on('threads:restarting', (event) => delays.push(event.delayMs));
  const failed = nextEvent(scheduler, 'job:failed', (event) => event.id === 'doomed');
  await h.jobs.add('exits', 'doomed', {});
  t.regex((await failed).error, /thread/);
  // A thread that exits before it has loaded its module counts as one that cannot start: no respawn loop.
  await eventually(() => delays.length >= 3);
  t.deepEqual(delays.slice(0, 3), [100, 200, 400]);
});

test('threads a loaded module ends before they run a job: each next thread starts later, as if it could not start', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('exits', 'exits-after-load', { threads: 1 });
  const events: { failures: number; delayMs: number }[] = [];
  scheduler.events.on('threads:restarting', ({ failures, delayMs }) => events.push({ failures, delayMs }));
  // Without a backoff the threads respawn as fast as they start, and say nothing: the bound fails the test.
  await eventually(() => events.length >= 3);
  t.deepEqual(events.slice(0, 3), [
    { failures: 1, delayMs: 100 },
    { failures: 2, delayMs: 200 },
    { failures: 3, delayMs: 400 },
  ]);
});

test('a thread lost with no culprit after it ran a job does not make the next thread start late', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('steady', 'misbehave', { threads: 1, attempts: 1 });
  const restarts: string[] = [];
  scheduler.events.on('threads:restarting', ({ reason }) => restarts.push(reason));
  const first = nextEvent(scheduler, 'job:finished', (event) => event.id === 'first');
  await h.jobs.add('steady', 'first', {});
  await first;
  const thread = scheduler.threads[0] as Worker;
  await thread.terminate();
  const second = nextEvent(scheduler, 'job:finished', (event) => event.id === 'second');
  await h.jobs.add('steady', 'second', {});
  await second;
  t.false(scheduler.threads.includes(thread));
  t.deepEqual(restarts, []);
});

test('a thread lost with no culprit after it was up for the longest restart wait, its job still going, does not make the next thread start late', async (t) => {
  const { h, scheduler } = await waitingJob(t, 'long', 5);
  const restarts: string[] = [];
  scheduler.events.on('threads:restarting', ({ reason }) => restarts.push(reason));
  // Up longer than the longest wait before a thread starts (5 s): a thread lost sooner, no run of it ended, could be its module's doing.
  await sleep(5_500);
  const first = scheduler.threads[0] as Worker;
  await first.terminate();
  // The job runs again at once in the replacement, which started on time.
  await eventually(() => waitingInAThread(scheduler, h.dir, 'long') && !scheduler.threads.includes(first));
  t.deepEqual(restarts, []);
});
