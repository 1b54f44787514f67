// Who pays when a handler thread is lost: the job that took it down, never
// the jobs that only shared it. These pin down the bug the chaos run found
// with many hanging handlers on one thread: a job lost with three threads in
// a row was charged a crash even when each thread's culprit had been named,
// and a thread the scheduler ended for a job that ignored its abort named no
// culprit at all.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import test from 'ava';
import { eventually, harness, nextEvent } from './scheduler-harness.js';

const lostCount = (history: readonly { type: string }[] | undefined): number => history?.filter((event) => event.type === 'lost').length ?? 0;

test('a job whose thread other handlers hang again and again is never charged a crash', async (t) => {
  const h = await harness(t);
  // attempts: 1, so that a crash charged to the steady job would fail it at once.
  const scheduler = await h.start('hang', 'misbehave', { threads: 1, maxJobs: 4, stuckThreadMs: 1_500, attempts: 1 });
  const charged: string[] = [];
  scheduler.events.on('job:crashed', (event) => charged.push(event.id));
  scheduler.events.on('job:failed', (event) => charged.push(event.id));
  let steady = nextEvent(scheduler, 'job:started', (event) => event.id === 'steady');
  await h.jobs.add('hang', 'steady', { sleepMs: 120_000 });
  await steady;
  for (const id of ['hang-1', 'hang-2', 'hang-3', 'hang-4']) {
    const failed = nextEvent(scheduler, 'job:failed', (event) => event.id === id);
    steady = nextEvent(scheduler, 'job:started', (event) => event.id === 'steady', 30_000);
    await h.jobs.add('hang', id, { loop: true });
    t.regex((await failed).error, /no progress/, `${id} is the culprit of its thread`);
    await steady;
  }
  t.deepEqual(charged, ['hang-1', 'hang-2', 'hang-3', 'hang-4'], 'only the hanging handlers are charged');
  const summary = scheduler.job('hang', 'steady');
  t.is(summary?.state, 'running');
  t.is(summary?.error_count, 0);
  t.is(lostCount(summary?.history), 4);
  t.regex(summary?.history.find((event) => event.type === 'lost')?.reason ?? '', /hang-4/, 'the lost event names the culprit');
});

test('a thread ended because a handler ignored its abort blames that job alone', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('stubborn', 'misbehave', { threads: 1, maxJobs: 4, heartbeatMs: 100, graceMs: 200, attempts: 1 });
  const charged: string[] = [];
  scheduler.events.on('job:crashed', (event) => charged.push(event.id));
  scheduler.events.on('job:failed', (event) => charged.push(event.id));
  let steady = nextEvent(scheduler, 'job:started', (event) => event.id === 'steady');
  await h.jobs.add('stubborn', 'steady', { sleepMs: 120_000 });
  await steady;
  for (const id of ['deaf-1', 'deaf-2', 'deaf-3', 'deaf-4']) {
    const started = nextEvent(scheduler, 'job:started', (event) => event.id === id);
    await h.jobs.add('stubborn', id, { sleepMs: 120_000 });
    await started;
    // Removed while running: its handler ignores the abort, so its thread is ended after the grace period.
    steady = nextEvent(scheduler, 'job:started', (event) => event.id === 'steady', 30_000);
    await h.jobs.remove('stubborn', id);
    await steady;
  }
  t.deepEqual(charged, [], 'nobody is charged: the cancelled jobs are gone, the steady job was a bystander');
  const summary = scheduler.job('stubborn', 'steady');
  t.is(summary?.state, 'running');
  t.is(lostCount(summary?.history), 4);
  for (const id of ['deaf-1', 'deaf-2', 'deaf-3', 'deaf-4']) t.is(await h.jobs.getJobState('stubborn', id), undefined);
});

test('a thread lost with no culprit named charges nobody until a job is lost that way three times in a row', async (t) => {
  const h = await harness(t);
  // A handler whose marker says it waits for its signal: no code of the job runs while the thread is terminated.
  const scheduler = await h.start('external', 'waiting-marker', { threads: 1, maxJobs: 2, attempts: 1 });
  const failed = nextEvent(scheduler, 'job:failed', (event) => event.id === 'long', 90_000);
  const started = nextEvent(scheduler, 'job:started', (event) => event.id === 'long');
  await h.jobs.add('external', 'long', { dir: h.dir });
  await started;
  const terminated = new Set<number>();
  for (let i = 1; i <= 3; i++) {
    let thread: Worker | undefined;
    await eventually(() => {
      thread = scheduler.threads.find((candidate) => existsSync(join(h.dir, `long@${candidate.threadId}`)) && !terminated.has(candidate.threadId));
      return thread !== undefined;
    });
    terminated.add(thread?.threadId ?? -1);
    // Listened for from here: the wait covers the restart, not the new thread's start-up before the marker.
    const restarted = i < 3 ? nextEvent(scheduler, 'job:started', (event) => event.id === 'long', 30_000) : undefined;
    // Terminated from outside while the handler waits.
    await thread?.terminate();
    if (restarted === undefined) break;
    const next = await Promise.race([restarted, failed]);
    if ('error' in next) {
      t.fail(`loss ${i} of 3 was charged: ${next.error}`);
      return;
    }
  }
  t.regex((await failed).error, /thread/, 'the third unexplained loss in a row is charged');
});

test('a thread terminated from outside while the code of a job runs charges that job at once', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('external', 'busy-after-marker', { threads: 1, maxJobs: 2, attempts: 1, stuckThreadMs: Number.POSITIVE_INFINITY });
  let losses = 0;
  scheduler.events.on('job:stopped', (event) => {
    if (event.cause === 'thread_lost') losses++;
  });
  const failed = nextEvent(scheduler, 'job:failed', (event) => event.id === 'busy');
  await h.jobs.add('external', 'busy', { dir: h.dir });
  let thread: Worker | undefined;
  await eventually(() => {
    thread = scheduler.threads.find((candidate) => existsSync(join(h.dir, `busy@${candidate.threadId}`)));
    return thread !== undefined;
  });
  await thread?.terminate();
  t.regex((await failed).error, /thread died/, 'the job whose code the thread ran is its culprit');
  t.is(losses, 0, 'it is not lost as a bystander would be');
});
