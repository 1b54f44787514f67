// When the handler pool sends a lane queued runs in a message of their own:
// only while the lane is busy with the processor's runs for a while, runs
// that wait on something outside the thread. Quick runs, and runs that
// never wait, have all ended by the time such a message arrives, and the
// lane would return every queued run unstarted; they go with the
// processor's next runs to start on the lane instead.
import test from 'ava';
import { HandlerPool } from '../../packages/jobtree/src/processors/handler-pool.js';
import type { LaneRun } from '../../packages/jobtree/src/processors/lane-protocol.js';
import { fixture } from './scheduler-harness.js';

let serials = 0;
const runs = (count: number, ms: number): LaneRun[] =>
  Array.from({ length: count }, () => {
    const serial = ++serials;
    return { serial, attempt: 1, job: { id: `q${serial}`, data: { ms }, priority: 0, scheduledTime: 0 } };
  });

/** A pool of one lane that queues any number of runs ahead once it knows how long a run takes. */
function onePool(t: import('ava').ExecutionContext, handler = 'thread-of') {
  const ended = new Map<number, () => void>();
  const started: number[] = [];
  const returned: number[] = [];
  const handlers = new HandlerPool({
    handlerUrl: fixture(handler).href,
    jobType: 'alone',
    threads: 1,
    stuckThreadMs: Number.POSITIVE_INFINITY,
    oneLaneBatchMs: 1e9,
    events: {
      settled: (serial, ok, outcome) => {
        if (!ok) throw new Error(`run ${serial} failed: ${JSON.stringify(outcome)}`);
        ended.get(serial)?.();
      },
      update: (_serial, _data, reply) => reply(),
      childResults: (_serial, reply) => reply([]),
      lost: (serial, _culprit, reason) => t.fail(`run ${serial} lost: ${reason}`),
      threadsRestarting: ({ reason }) => t.fail(`threads restarting: ${reason}`),
      started: (serial) => started.push(serial),
      returned: (serial) => returned.push(serial),
    },
  });
  t.teardown(() => handlers.close());
  const end = (batch: readonly LaneRun[]) => Promise.all(batch.map((run) => new Promise<void>((resolve) => ended.set(run.serial, resolve))));
  return { handlers, started, returned, end };
}

/** Lets this turn's messages to the lanes go (they leave in a microtask), and nothing else happen. */
const afterTurnMessages = () => Promise.resolve().then(() => undefined);

test('quick runs take queued runs only with more runs for the lane in the same message', async (t) => {
  const { handlers, end } = onePool(t);
  // A lane runs dry of one large batch: the pool learns a run takes it a tiny fraction of a millisecond.
  const learn = runs(200, 0);
  handlers.start(learn);
  await end(learn);
  const first = runs(1, 0);
  const second = runs(1, 0);
  handlers.start(first); // the idle lane's runs go at once
  handlers.start(second); // these wait for the end of the turn
  t.true(handlers.aheadRoom() > 0, 'queued runs may join the runs of this turn');
  const queued = runs(4, 0);
  handlers.runAhead(queued);
  await afterTurnMessages();
  const alone = handlers.aheadRoom();
  await Promise.all([end(first), end(second), end(queued)]);
  t.is(alone, 0, 'with no runs of this turn to join, queued runs would reach a lane that has run dry');
});

test('a lane busy with slow runs takes queued runs on their own, and starts them as its runs end', async (t) => {
  const { handlers, started, returned, end } = onePool(t);
  const learn = runs(1, 100);
  handlers.start(learn);
  await end(learn);
  const slow = runs(1, 200);
  handlers.start(slow);
  await afterTurnMessages();
  t.true(handlers.aheadRoom() > 0);
  const queued = runs(2, 0);
  handlers.runAhead(queued);
  await Promise.all([end(slow), end(queued)]);
  t.deepEqual(started.sort(), queued.map((run) => run.serial).sort());
  t.deepEqual(returned, []);
});

test('runs that keep their thread busy without waiting take queued runs only with more runs for the lane', async (t) => {
  const { handlers, end } = onePool(t, 'busy-for');
  // Each run holds the lane 2 ms, long enough to take queued runs, but in the turn it starts in.
  const learn = runs(4, 2);
  handlers.start(learn);
  await end(learn);
  const first = runs(1, 2);
  handlers.start(first);
  await afterTurnMessages();
  const alone = handlers.aheadRoom();
  await end(first);
  t.is(alone, 0, 'the lane ends its runs before it reads a message of queued runs alone');
});
