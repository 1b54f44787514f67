// Runs queued in a lane beyond its started ones (HandlerPool.runAhead): the
// lane starts one as each started run of the processor there ends, never
// more at once; a queued run that is aborted, or whose thread dies, comes
// back unstarted, and one that started before its thread died is reported
// started, then lost like any run.
import test, { type ExecutionContext } from 'ava';
import { setEnvironmentData } from 'node:worker_threads';
import { HandlerPool } from '../../packages/jobtree/src/processors/handler-pool.js';
import type { LaneRun } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { CONCURRENCY_KEY } from './fixtures/concurrency.js';
import { eventually, fixture, harness } from './scheduler-harness.js';

let serials = 1_000_000;
const run = (data: Record<string, unknown>): LaneRun => {
  const serial = ++serials;
  return { serial, attempt: 1, job: { id: `r${serial}`, data, priority: 0, scheduledTime: 0 } };
};

type Event = { kind: 'started' | 'returned' | 'settled' | 'lost'; serial: number; culprit?: number | undefined };

/** A pool of one lane running `handler`, recording what it reports. */
function pool(t: ExecutionContext, handler: string): { pool: HandlerPool; events: Event[]; of(serial: number): string[] } {
  const events: Event[] = [];
  const handlers = new HandlerPool({
    handlerUrl: fixture(handler).href,
    jobType: 'queued',
    threads: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    events: {
      started: (serial) => events.push({ kind: 'started', serial }),
      returned: (serial) => events.push({ kind: 'returned', serial }),
      settled: (serial) => events.push({ kind: 'settled', serial }),
      lost: (serial, culprit) => events.push({ kind: 'lost', serial, culprit }),
      threadsRestarting: ({ reason }) => t.fail(`threads restarting: ${reason}`),
      update: (_serial, _data, reply) => reply(),
      childResults: (_serial, reply) => reply([]),
    },
  });
  t.teardown(() => handlers.close());
  return { pool: handlers, events, of: (serial) => events.filter((event) => event.serial === serial).map((event) => event.kind) };
}

test('runs queued in a lane start one as each started run ends: never more run at once than were started', async (t) => {
  const counts = new Int32Array(new SharedArrayBuffer(8));
  setEnvironmentData(CONCURRENCY_KEY, counts.buffer);
  const { pool: handlers, events, of } = pool(t, 'concurrency');
  const started = [run({ ms: 30 }), run({ ms: 30 })];
  const queued = Array.from({ length: 6 }, () => run({ ms: 5 }));
  handlers.start(started);
  handlers.runAhead(queued);
  await eventually(() => events.filter((event) => event.kind === 'settled').length === 8);
  t.is(Atomics.load(counts, 1), 2, 'at most the two started runs at once');
  for (const one of started) t.deepEqual(of(one.serial), ['settled']);
  for (const one of queued) t.deepEqual(of(one.serial), ['started', 'settled'], 'started before it ended, once');
});

test('a queued run that is aborted never starts: it comes back unstarted, and the started run goes on', async (t) => {
  const { pool: handlers, events, of } = pool(t, 'misbehave');
  const first = run({ sleepMs: 100 });
  const waiting = run({});
  handlers.start([first]);
  handlers.runAhead([waiting]);
  handlers.abort([waiting.serial], 'cancel');
  await eventually(() => of(first.serial).includes('settled'));
  t.deepEqual(of(waiting.serial), ['returned']);
  t.false(handlers.isStarted(waiting.serial));
  t.is(events.length, 2);
});

test("a lane's thread that dies returns its queued runs unstarted: only its started run is lost", async (t) => {
  const { pool: handlers, of } = pool(t, 'misbehave');
  const culprit = run({ exit: true });
  const queued = [run({}), run({})];
  handlers.start([culprit]);
  handlers.runAhead(queued);
  await eventually(() => of(culprit.serial).includes('lost'));
  for (const one of queued) t.deepEqual(of(one.serial), ['returned']);
});

test('a queued run that takes its thread down before the lane reports its start is started, then lost as the culprit', async (t) => {
  const { pool: handlers, events, of } = pool(t, 'exits-at-once');
  const first = run({});
  const crasher = run({ exit: true });
  const after = run({});
  handlers.start([first]);
  handlers.runAhead([crasher, after]);
  await eventually(() => of(crasher.serial).includes('lost'));
  t.deepEqual(of(crasher.serial), ['started', 'lost']);
  t.is(events.find((event) => event.kind === 'lost' && event.serial === crasher.serial)?.culprit, crasher.serial);
  t.deepEqual(of(after.serial), ['returned'], 'the run queued behind it never ran');
});

test('runs queued for a processor with no run left on the lane come back unstarted', async (t) => {
  const { pool: handlers, of } = pool(t, 'misbehave');
  const first = run({});
  handlers.start([first]);
  await eventually(() => of(first.serial).includes('settled'));
  const stranded = run({});
  handlers.runAhead([stranded]);
  await eventually(() => of(stranded.serial).length > 0);
  t.deepEqual(of(stranded.serial), ['returned']);
});

test('with runs queued in its lanes, a scheduler still runs at most maxJobs handlers at once', async (t) => {
  t.timeout(120_000);
  const counts = new Int32Array(new SharedArrayBuffer(8));
  setEnvironmentData(CONCURRENCY_KEY, counts.buffer);
  const h = await harness(t);
  const scheduler = await h.start('bounded', 'concurrency', { maxJobs: 3, threads: 2 });
  const count = 600;
  let finished = 0;
  const done = new Promise<void>((resolve) =>
    scheduler.events.on('job:finished', () => {
      if (++finished === count) resolve();
    }),
  );
  await h.jobs.addMany('bounded', Array.from({ length: count }, (_, i) => ({ id: `j${i}`, data: { ms: 1 } })));
  await done;
  t.true(Atomics.load(counts, 1) <= 3, `${Atomics.load(counts, 1)} handlers ran at once`);
});
