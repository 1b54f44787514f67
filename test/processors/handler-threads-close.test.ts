// Closing the handler threads never terminates a thread in the middle of an
// import: a thread terminated while it loads a native addon (lmdb, under a
// handler module's imports) can abort the whole process. A thread that reads
// the close while it imports a module ends itself there, at a message, in
// no import's code; a thread stuck in a handler's code is ended at once.

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import test from 'ava';
import { HandlerThreads, ONE_LANE_BATCH_MS } from '../../packages/jobtree/src/processors/handler-threads.js';
import { eventually, fixture } from './scheduler-harness.js';

test('close right after a load ends the threads without waiting for the import, and the load rejects as stopped', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const marker = join(dir, 'loaded');
  process.env.SLOW_LOAD_MARKER = marker;
  t.teardown(() => {
    delete process.env.SLOW_LOAD_MARKER;
  });
  const threads = new HandlerThreads({ threads: 2 });
  const loading = threads.load(fixture('slow-to-load').href).catch((error: unknown) => error);
  await threads.close();
  // Past the import's own wait: a thread still importing would have written the marker by now.
  await sleep(800);
  const finished = (await readFile(marker, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  t.deepEqual(finished, [], 'no thread went on importing after close');
  t.like(await loading, { code: 'stopped' });
});

/** Half the bound close once waited for threads loading a module: a close that waits it out fails the test. */
const PROMPTLY_MS = 5_000;

/** Whether `promise` settles within PROMPTLY_MS. */
async function settlesPromptly(promise: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, PROMPTLY_MS, false);
  });
  const outcome = await Promise.race([promise.then(() => true), late]);
  clearTimeout(timer);
  return outcome;
}

/** A processor's events for a share joined by hand, which the tests here do not look at. */
const ignoredEvents = {
  settled: () => {},
  update: (_serial: number, _data: unknown, reply: () => void) => reply(),
  childResults: (_serial: number, reply: (children: []) => void) => reply([]),
  lost: () => {},
  threadsRestarting: () => {},
  started: () => {},
  returned: () => {},
};

test('close ends a thread stuck in a handler’s code at once, and the load waiting there rejects as stopped', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const threads = new HandlerThreads({ threads: 1 });
  let closing: Promise<void> | undefined;
  t.teardown(() => closing ?? threads.close());
  const share = threads.join({
    handlerUrl: fixture('busy-after-marker').href,
    jobType: 'stuck',
    maxLanes: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    oneLaneBatchMs: ONE_LANE_BATCH_MS,
    events: ignoredEvents,
  });
  await threads.load(share.handlerUrl);
  threads.start(share, [{ serial: 1, attempt: 1, job: { id: 'loops', data: { dir }, priority: 0, scheduledTime: 0 } }]);
  // Its marker written, the handler loops: the thread reads no message any more.
  await eventually(async () => (await readdir(dir)).length > 0);
  const loading = threads.load(fixture('noop').href).catch((error: unknown) => error);
  closing = threads.close();
  t.true(await settlesPromptly(closing), 'close waited for the stuck thread');
  t.like(await loading, { code: 'stopped' });
});

test('close ends a thread whose handler module’s import never finishes at once, and its load rejects as stopped', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const marker = join(dir, 'importing');
  process.env.NEVER_LOADS_MARKER = marker;
  t.teardown(() => {
    delete process.env.NEVER_LOADS_MARKER;
  });
  const threads = new HandlerThreads({ threads: 1 });
  let closing: Promise<void> | undefined;
  t.teardown(() => closing ?? threads.close());
  const loading = threads.load(fixture('never-loads').href).catch((error: unknown) => error);
  // Up, and in the module's top level, which waits for ever.
  await eventually(async () => (await readFile(marker, 'utf8').catch(() => '')) !== '');
  closing = threads.close();
  t.true(await settlesPromptly(closing), 'close waited for the import');
  t.like(await loading, { code: 'stopped' });
});
