// What a handler gets after its job travelled to a lane as a packed batch
// (flat arrays of plain values, not job objects), and its signal, made only
// when the handler first reads it.
import test from 'ava';
import { HandlerAbortError } from '../../packages/jobtree/src/processors/errors.js';
import type { HandlerJob } from '../../packages/jobtree/src/processors/index.js';
import { type LaneRun, type PackedRuns, packRun, unpackRuns } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { RunSignal } from '../../packages/jobtree/src/processors/run-signal.js';
import { SkippingClock, eventually, harness, nextEvent } from './scheduler-harness.js';

test('a packed batch unpacks, after a structured clone, to every field of every job', (t) => {
  const runs: LaneRun[] = [
    { serial: 7, attempt: 1, job: { id: 'a', data: { n: [1, 2], s: 'x' }, priority: 0, scheduledTime: 1_700_000_000, continuous: false } },
    { serial: 8, attempt: 3, job: { id: 'b', data: null, priority: 5, scheduledTime: 1_700_000_001.5, continuous: true } },
    { serial: 9, attempt: 2, job: { id: 'c', data: 'text', priority: 1, scheduledTime: 0 } },
  ];
  const packed: PackedRuns = [];
  for (const run of runs) packRun(packed, run);
  const seen: [number, HandlerJob][] = [];
  unpackRuns(structuredClone(packed), 'thumb', (serial, job) => seen.push([serial, job]));
  t.deepEqual(seen, [
    [7, { type: 'thumb', id: 'a', data: { n: [1, 2], s: 'x' }, priority: 0, scheduledTime: 1_700_000_000, continuous: false, attempt: 1 }],
    [8, { type: 'thumb', id: 'b', data: null, priority: 5, scheduledTime: 1_700_000_001.5, continuous: true, attempt: 3 }],
    [9, { type: 'thumb', id: 'c', data: 'text', priority: 1, scheduledTime: 0, continuous: false, attempt: 2 }],
  ]);
});

test('a run aborted before its handler reads the signal gets a signal born aborted with that cause', (t) => {
  const run = new RunSignal();
  run.abort('rotation');
  run.abort('cancel');
  const { signal } = run;
  t.true(signal.aborted);
  t.true(signal.reason instanceof HandlerAbortError);
  t.is((signal.reason as HandlerAbortError).cause, 'rotation', 'the first cause wins');
  t.is(run.signal, signal, 'one signal per run');
});

test('a run aborted after its handler read the signal fires abort once, with the first cause', (t) => {
  const run = new RunSignal();
  const { signal } = run;
  t.false(signal.aborted);
  const causes: unknown[] = [];
  signal.addEventListener('abort', () => causes.push((signal.reason as HandlerAbortError).cause));
  run.abort('shutdown');
  run.abort('cancel');
  t.deepEqual(causes, ['shutdown']);
});

test('a handler gets its job whole from the packed lane message: type, id, data, priority, schedule, kind and attempt', async (t) => {
  const h = await harness(t);
  const clock = new SkippingClock();
  const scheduler = await h.start('echo', 'echo-job', { clock, acceptWaitMs: 100 });
  const scheduledTime = Math.floor(Date.now() / 1000) - 5;
  const first = nextEvent(scheduler, 'job:finished', (event) => event.id === 'plain');
  await h.jobs.add('echo', 'plain', { deep: { list: [1, 'two', null] } }, { priority: 4, scheduledTime });
  await first;
  t.deepEqual((await h.jobs.getJob('echo', 'plain'))?.result, {
    seen: { type: 'echo', id: 'plain', data: { deep: { list: [1, 'two', null] } }, priority: 4, scheduledTime, continuous: false, attempt: 1 },
    aborted: false,
  });
  // A crash: the next run is attempt 2, after the backoff the clock skips.
  const crashed = nextEvent(scheduler, 'job:crashed', (event) => event.id === 'again');
  await h.jobs.add('echo', 'again', { failFirst: true });
  await crashed;
  const second = nextEvent(scheduler, 'job:finished', (event) => event.id === 'again');
  await eventually(async () => (await h.jobs.getJobState('echo', 'again')) === 'pending');
  clock.skip(31_000);
  await second;
  const result = (await h.jobs.getJob('echo', 'again'))?.result as unknown as { seen: HandlerJob };
  t.like(result.seen, { type: 'echo', id: 'again', data: { failFirst: true }, continuous: false, attempt: 2 });
});
