// How the handler pool places a batch of runs on its lanes: a batch the
// lanes run through quickly goes to one lane whole (a message to a sleeping
// thread costs the main thread a wake-up), any other is spread over the
// least busy lanes, and so is every batch before the pool knows how long
// runs take.
import test from 'ava';
import { HandlerPool, type HandlerPoolOptions } from '../../packages/jobtree/src/processors/handler-pool.js';
import type { LaneRun } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { fixture } from './scheduler-harness.js';

let serials = 0;
const runs = (count: number, ms: number): LaneRun[] =>
  Array.from({ length: count }, () => {
    const serial = ++serials;
    return { serial, attempt: 1, job: { id: `r${serial}`, data: { ms }, priority: 0, scheduledTime: 0 } };
  });

/** A pool of two lanes whose settled runs resolve `ran(batch)` with the thread ids they ran on. */
function pool(t: import('ava').ExecutionContext, options: Partial<HandlerPoolOptions> = {}): { ran(batch: LaneRun[]): Promise<number[]> } {
  const waiting = new Map<number, (threadId: number) => void>();
  const handlers = new HandlerPool({
    handlerUrl: fixture('thread-of').href,
    jobType: 'where',
    threads: 2,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    ...options,
    events: {
      settled: (serial, ok, outcome) => {
        if (!ok) throw new Error(`run ${serial} failed: ${JSON.stringify(outcome)}`);
        waiting.get(serial)?.((outcome as { threadId: number }).threadId);
      },
      update: (_serial, _data, reply) => reply(),
      childResults: (_serial, reply) => reply([]),
      lost: (serial, _culprit, reason) => t.fail(`run ${serial} lost: ${reason}`),
      threadsRestarting: ({ reason }) => t.fail(`threads restarting: ${reason}`),
      started: () => {},
      returned: () => {},
    },
  });
  t.teardown(() => handlers.close());
  return {
    ran(batch) {
      const done = Promise.all(batch.map((run) => new Promise<number>((resolve) => waiting.set(run.serial, resolve))));
      handlers.start(batch);
      return done;
    },
  };
}

test('before any lane has run dry, a batch is spread over the lanes', async (t) => {
  const lanes = pool(t, { oneLaneBatchMs: 1e9 });
  const threads = await lanes.ran(runs(8, 0));
  t.is(new Set(threads).size, 2);
});

test('once runs are known to be quick, a short batch goes to one lane whole', async (t) => {
  // Any measured time per run counts as quick here, so the test does not hang on the machine's speed.
  const lanes = pool(t, { oneLaneBatchMs: 1e9 });
  await lanes.ran(runs(2, 0)); // a lane runs dry: the pool learns how long a run takes
  for (let round = 0; round < 3; round++) {
    const threads = await lanes.ran(runs(20, 0));
    t.is(new Set(threads).size, 1, `round ${round}: ${threads.join(' ')}`);
  }
});

test('runs that keep a lane busy are spread over the lanes batch after batch', async (t) => {
  const lanes = pool(t);
  for (let round = 0; round < 2; round++) {
    const threads = await lanes.ran(runs(4, 150));
    t.is(new Set(threads).size, 2, `round ${round}: ${threads.join(' ')}`);
  }
});
