// A run for an idle lane leaves the main thread at once: the lane's thread
// sleeps, and its wake-up is most of the run's way to its handler, so the
// message goes from the pool's start itself (not at the end of the turn)
// and before the scheduler begins the run (its span, its time limit, its
// job:started listeners). Two tests hold the main thread in one
// synchronous step: the handler in the thread starts meanwhile only if its
// run was already posted. A lane whose runs ended in this turn is not idle:
// the runs that refill it go together at the end of the turn.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessagePort } from 'node:worker_threads';
import test, { type ExecutionContext } from 'ava';
import { HandlerThreads, ONE_LANE_BATCH_MS } from '../../packages/jobtree/src/processors/handler-threads.js';
import { type LaneRun, RUN_FIELDS, type ToLane } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { fixture, harness, nextEvent } from './scheduler-harness.js';

/** Long enough for a thread on a loaded machine to wake and run a handler; only a broken start waits it out. */
const HOLD_MS = 10_000;

/** Holds the main thread (no turn of its event loop) until `file` exists; false when HOLD_MS passed first. */
function appearsWhileHeld(file: string): boolean {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const until = performance.now() + HOLD_MS;
  while (!existsSync(file)) {
    if (performance.now() > until) return false;
    Atomics.wait(nap, 0, 0, 1);
  }
  return true;
}

/** A processor's events for a share joined by hand: `settled` as given; a lost run, or a thread that exits while it starts, fails the test. */
function shareEvents(t: ExecutionContext, settled: (serial: number) => void) {
  return {
    settled: (serial: number) => settled(serial),
    update: (_serial: number, _data: unknown, reply: () => void) => reply(),
    childResults: (_serial: number, reply: (results: []) => void) => reply([]),
    lost: (serial: number, _culprit: number | undefined, reason: string) => t.fail(`run ${serial} lost: ${reason}`),
    threadsRestarting: ({ reason }: { reason: string }) => t.fail(`threads restarting: ${reason}`),
    started: () => {},
    returned: () => {},
  };
}

/** Joins a processor of `jobType` running fixture `handler` on one lane, with no stuck-thread limit. */
function joinOneLane(t: ExecutionContext, threads: HandlerThreads, handler: string, jobType: string, settled: (serial: number) => void) {
  return threads.join({
    handlerUrl: fixture(handler).href,
    jobType,
    maxLanes: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    oneLaneBatchMs: ONE_LANE_BATCH_MS,
    events: shareEvents(t, settled),
  });
}

test("a run for an idle lane is posted by start itself: its handler starts while the main thread is still in start's step", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-idle-lane-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const threads = new HandlerThreads({ threads: 1 });
  t.teardown(() => threads.close());
  let settle: (() => void) | undefined;
  const share = joinOneLane(t, threads, 'start-marker', 'mark', () => settle?.());
  await threads.load(share.handlerUrl);
  const settled = new Promise<void>((resolve) => (settle = resolve));
  threads.start(share, [{ serial: 1, attempt: 1, job: { id: 'idle', data: { dir }, priority: 0, scheduledTime: 0 } }]);
  t.true(appearsWhileHeld(join(dir, 'idle.started')));
  await settled;
});

test('a thread run is on its way to its idle lane before its job:started listeners run', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('mark', 'start-marker');
  // A first run loads the module in the lane; the lane is idle again once it ends.
  const warm = nextEvent(scheduler, 'job:finished', (event) => event.id === 'warm');
  await h.jobs.add('mark', 'warm', { dir: h.dir });
  await warm;
  let startedMeanwhile: boolean | undefined;
  scheduler.events.on('job:started', (event) => {
    if (event.id === 'idle') startedMeanwhile = appearsWhileHeld(join(h.dir, 'idle.started'));
  });
  const finished = nextEvent(scheduler, 'job:finished', (event) => event.id === 'idle');
  await h.jobs.add('mark', 'idle', { dir: h.dir });
  await finished;
  t.true(startedMeanwhile);
});

test('runs for a lane whose last run ended in this turn go to it together, in one message at the end of the turn', async (t) => {
  const threads = new HandlerThreads({ threads: 1 });
  t.teardown(() => threads.close());
  // The starts of this test's processor (other tests of the file post too).
  const starts: Extract<ToLane, { kind: 'start' }>[] = [];
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (this: MessagePort, ...args: Parameters<MessagePort['postMessage']>) {
    const message = args[0] as ToLane;
    if (message.kind === 'start' && message.type === 'refill') starts.push(message);
    return post.apply(this, args);
  };
  t.teardown(() => {
    MessagePort.prototype.postMessage = post;
  });
  const run = (serial: number): LaneRun => ({ serial, attempt: 1, job: { id: `r${serial}`, data: {}, priority: 0, scheduledTime: 0 } });
  let settledRuns = 0;
  let allSettled: (() => void) | undefined;
  const share = joinOneLane(t, threads, 'thread-of', 'refill', (serial) => {
    settledRuns++;
    // The lane's last run ended in this turn: its slot refills, in two starts.
    if (serial === 1) {
      threads.start(share, [run(2)]);
      threads.start(share, [run(3)]);
    }
    if (settledRuns === 3) allSettled?.();
  });
  await threads.load(share.handlerUrl);
  const settled = new Promise<void>((resolve) => (allSettled = resolve));
  threads.start(share, [run(1)]);
  await settled;
  t.deepEqual(
    starts.map((message) => message.runs.length / RUN_FIELDS),
    [1, 2],
  );
});
