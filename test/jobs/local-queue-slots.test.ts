// A local queue whose jobs an owner starts into slots of its own (the
// processors' scheduler runs on one): the queue takes jobs for the free
// slots and offers them to the owner as they arrive, the owner takes what
// the queue holds with takeReady as its slots free up, a failed take is reported and tried again after a
// wait while slots are free, the queue names its mode, and a stop gives
// back what it holds.

import test from 'ava';
import { JobsError, LocalQueue } from '@jobtree/core';
import type { Job, Jobs, LocalQueueSlots, LocalQueueSource } from '@jobtree/core';
import { MAX_SPARE_IN_PROCESS } from '../../packages/core/src/jobs/spare-jobs.js';
import { openTempJobs, T1, T2 } from './temp-jobs.js';

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An owner with `slots` slots that starts every job it is offered into a free slot, unless told not to take. */
class SlotOwner implements LocalQueueSlots {
  slots: number;
  taking = true;
  readonly running = new Map<string, Job>();
  readonly started: string[] = [];
  readonly errors: unknown[] = [];
  queue: LocalQueue | undefined;

  constructor(slots: number) {
    this.slots = slots;
  }

  free(): number {
    return this.slots - this.running.size;
  }

  offer(jobs: readonly Job[]): number {
    if (!this.taking) return 0;
    const count = Math.min(jobs.length, Math.max(0, this.free()));
    for (const job of jobs.slice(0, count)) this.start(job);
    return count;
  }

  start(job: Job): void {
    this.running.set(job.id, job);
    this.started.push(job.id);
  }

  failed(error: unknown): void {
    this.errors.push(error);
  }

  takeFromQueue(): void {
    for (const job of this.queue?.takeReady(Math.max(0, this.free())) ?? []) this.start(job);
  }

  /** Ends one run by itself: it finishes, its slot frees and takes the next job. */
  async end(jobs: Jobs, id: string): Promise<void> {
    const job = this.running.get(id) as Job;
    this.running.delete(id);
    this.queue?.ended();
    this.takeFromQueue();
    await jobs.finish(job);
  }
}

/** Adds `count` jobs of T1, `${prefix}0` on, a thousand per addMany. */
async function addInThousands(jobs: Jobs, prefix: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1_000) {
    await jobs.addMany(
      T1,
      Array.from({ length: Math.min(1_000, count - start) }, (_, i) => ({ id: `${prefix}${start + i}`, data: { i: start + i } })),
    );
  }
}

/**
 * Starts `queue` and ends each of `owner`'s runs as soon as it starts, until
 * `count` jobs ran; the most jobs the queue held, and ran at once, after any step.
 */
async function runAll(jobs: Jobs, queue: LocalQueue, owner: SlotOwner, count: number): Promise<{ mostHeld: number; mostRunning: number }> {
  queue.takeReady(0);
  let mostHeld = 0;
  let mostRunning = 0;
  while (owner.started.length < count || owner.running.size > 0) {
    const [id] = owner.running.keys();
    if (id === undefined) await new Promise((resolve) => setImmediate(resolve));
    else await owner.end(jobs, id);
    mostHeld = Math.max(mostHeld, queue.held);
    mostRunning = Math.max(mostRunning, owner.running.size);
  }
  return { mostHeld, mostRunning };
}

function slotQueue(source: LocalQueueSource, type: string, owner: SlotOwner, options: { holdMs?: number; waitMs?: number } = {}): LocalQueue {
  const queue = new LocalQueue(source, type, { slots: owner, ...options });
  owner.queue = queue;
  return queue;
}

/** `jobs` as a source that counts its accepts and updates, and fails its accepts while `failing`. */
function countingSource(jobs: Jobs) {
  const state = {
    accepts: 0,
    updates: 0,
    failing: false,
    source: {
      acceptMany: async (type, max, options) => {
        state.accepts += 1;
        if (state.failing) throw new JobsError('closed', 'the test closed the store');
        return jobs.acceptMany(type, max, options);
      },
      update: (job, data) => {
        state.updates += 1;
        return jobs.update(job, data);
      },
      finish: (job, data) => jobs.finish(job, data),
      finishMany: (items) => jobs.finishMany(items),
      resubmit: jobs.resubmit.bind(jobs),
      getTypeTimeout: (type) => jobs.getTypeTimeout(type),
    } as LocalQueueSource,
  };
  return state;
}

test('an owner is offered as many jobs as it has free slots, and the queue takes more as slots free', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, data: { i } })),
  );
  const owner = new SlotOwner(3);
  const queue = slotQueue(jobs, T1, owner);
  t.teardown(() => queue.stop());
  queue.takeReady(0);
  await until(() => owner.running.size === 3, 'three runs');
  // No run has ended yet: nothing beyond the free slots is taken.
  await sleep(100);
  t.is(queue.held, 0);
  t.is((await jobs.getActiveJobIds(T1)).length, 3, 'only the jobs of the three slots are running in the store');
  while (owner.started.length < 10 || owner.running.size > 0) {
    const [id] = owner.running.keys();
    if (id === undefined) await sleep(5);
    else await owner.end(jobs, id);
    t.true(owner.running.size <= 3);
  }
  t.is(new Set(owner.started).size, 10, 'every job started once');
  t.is(await jobs.pendingCount(T1), 0);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('while runs end quickly the queue holds spare jobs beyond the free slots, and the owner never runs more than its slots', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const count = 3_000;
  await addInThousands(jobs, 'q', count);
  const owner = new SlotOwner(2);
  const queue = slotQueue(jobs, T1, owner);
  t.teardown(() => queue.stop());
  const { mostHeld, mostRunning } = await runAll(jobs, queue, owner, count);
  t.true(mostRunning <= 2, `${mostRunning} jobs ran at once in 2 slots`);
  t.true(mostHeld >= 1, 'jobs waited in the queue beyond the free slots');
  t.is(new Set(owner.started).size, count);
  t.deepEqual(await jobs.getActiveJobIds(T1), []);
});

test('with takes slowed by a busy event loop, a queue on a store this process runs holds at most one take beyond the free slots', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const count = 4_000;
  await addInThousands(jobs, 'b', count);
  // Every take answers 80 ms late, as one does behind a loop busy with runs.
  const source: LocalQueueSource = {
    acceptMany: async (type, max, options) => {
      await sleep(80);
      return jobs.acceptMany(type, max, options);
    },
    update: (job, data) => jobs.update(job, data),
    finish: (job, data) => jobs.finish(job, data),
    finishMany: (items) => jobs.finishMany(items),
    resubmit: jobs.resubmit.bind(jobs),
    getTypeTimeout: (type) => jobs.getTypeTimeout(type),
    role: jobs.role,
  };
  t.is(source.role, 'owner');
  const owner = new SlotOwner(2);
  const queue = slotQueue(source, T1, owner);
  t.teardown(() => queue.stop());
  const { mostHeld } = await runAll(jobs, queue, owner, count);
  t.true(mostHeld > 2, `${mostHeld} jobs held: spare jobs beyond the free slots`);
  t.true(mostHeld <= 2 + MAX_SPARE_IN_PROCESS, `${mostHeld} jobs held for 2 slots`);
  t.is(new Set(owner.started).size, count);
});

test('the queue names its mode: waiting on an empty store, taking after a full take, stopped after stop', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const idle = new LocalQueue(jobs, T2, { slots: new SlotOwner(1), waitMs: 50 });
  t.is(idle.mode, 'waiting');
  idle.takeReady(0);
  await sleep(200);
  t.is(idle.mode, 'waiting', 'takes on an empty store find nothing');
  await idle.stop();
  t.is(idle.mode, 'stopped');

  await jobs.addMany(
    T1,
    Array.from({ length: 10 }, (_, i) => ({ id: `m${i}`, data: { i } })),
  );
  const owner = new SlotOwner(2);
  const busy = slotQueue(jobs, T1, owner);
  busy.takeReady(0);
  await until(() => owner.running.size === 2, 'two runs');
  t.is(busy.mode, 'taking', 'the take brought all it asked for');
  await busy.stop();
  t.is(busy.mode, 'stopped');
  t.deepEqual(busy.takeReady(2), []);
});

test('an idle owner that runs each job as it comes costs one take per job: a take handed every job its add brought leaves the queue waiting', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const counted = countingSource(jobs);
  const owner = new SlotOwner(1);
  const queue = slotQueue(counted.source, T1, owner, { waitMs: 10_000 });
  t.teardown(() => queue.stop());
  queue.takeReady(0);
  await until(() => counted.accepts === 1, 'the first take');
  const count = 5;
  for (let i = 0; i < count; i++) {
    // Far apart: no spare job is worth holding for runs this rare.
    await sleep(100);
    await jobs.add(T1, `idle${i}`, { i });
    await until(() => owner.running.size === 1, `the run of idle${i}`);
    t.is(queue.mode, 'waiting', 'the add that served the take brought no other job');
    await owner.end(jobs, `idle${i}`);
  }
  await sleep(100);
  t.deepEqual(owner.started, Array.from({ length: count }, (_, i) => `idle${i}`));
  // Each job's take waited for it; the next one waits for the next job, none finds an empty store first.
  t.is(counted.accepts, count + 1);
});

test('a take that fails is told to the owner and tried again after waitMs while slots are free, never in a loop', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  const state = countingSource(jobs);
  state.failing = true;
  const owner = new SlotOwner(1);
  const queue = slotQueue(state.source, T1, owner, { waitMs: 100 });
  t.teardown(() => queue.stop());
  const began = performance.now();
  queue.takeReady(0);
  await until(() => owner.errors.length >= 3, 'three failures told');
  const elapsed = performance.now() - began;
  t.true(owner.errors.every((error) => JobsError.is(error, 'closed')));
  // One take per wait, never in a loop: about one per 100 ms spent (timers may run a little early or late).
  t.true(state.accepts <= Math.ceil(elapsed / 100) + 2, `${state.accepts} accepts in ${Math.round(elapsed)} ms`);
  // No slot free: no more takes.
  owner.slots = 0;
  await sleep(150);
  const accepts = state.accepts;
  await sleep(300);
  t.is(state.accepts, accepts);
  // A slot frees and the store works again: the next take brings the job.
  state.failing = false;
  await jobs.add(T1, 'after', { n: 1 });
  owner.slots = 1;
  queue.takeReady(0);
  await until(() => owner.running.has('after'), 'the job');
});

test('stop gives back the jobs held for the owner, and a job held past an eighth of its hold is stamped again as it is handed out', async (t) => {
  t.timeout(60_000);
  const { jobs } = await openTempJobs(t);
  await jobs.addMany(
    T1,
    Array.from({ length: 4 }, (_, i) => ({ id: `h${i}`, data: { i } })),
  );
  const state = countingSource(jobs);
  const owner = new SlotOwner(4);
  owner.taking = false;
  // A long hold, so that a loaded machine's stalls never run it out here.
  const queue = slotQueue(state.source, T1, owner, { holdMs: 8_000 });
  queue.takeReady(0);
  await until(() => queue.held === 4, 'the held jobs');
  // Past an eighth of the hold, well within it.
  await sleep(1_100);
  const updates = state.updates;
  const [job] = queue.takeReady(1);
  t.truthy(job);
  await until(() => state.updates === updates + 1, 'the stamp');
  t.is(queue.held, 3);
  await queue.stop();
  t.is(await jobs.pendingCount(T1), 3, 'the held jobs are pending again');
  t.deepEqual(await jobs.getActiveJobIds(T1), [job?.id]);
  t.is(await jobs.finish(job as Job), 'finished', 'the stamped job is still the owner\'s');
});

test('slot options are checked with invalid_option', (t) => {
  const source = {} as LocalQueueSource;
  const cases: unknown[] = [
    { slots: { free: () => 1 } },
    { slots: new SlotOwner(1), size: 10 },
    { slots: new SlotOwner(1), waitMs: 0 },
    { slots: new SlotOwner(1), holdMs: -1 },
  ];
  for (const options of cases) {
    const error = t.throws(() => new LocalQueue(source, T1, options as never), { instanceOf: JobsError });
    t.is(error?.code, 'invalid_option');
  }
});

test('while an accept is in flight the queue sends another only for a quarter or more of what it wants held, never a job or two alone', async (t) => {
  t.timeout(120_000);
  const { jobs } = await openTempJobs(t);
  const count = 6_000;
  await addInThousands(jobs, 'p', count);
  // Accepts asked for while another was in flight, and the size of the one in flight.
  const beside: { asked: number; inFlight: number }[] = [];
  const inFlight: number[] = [];
  const source = {
    ...countingSource(jobs).source,
    acceptMany: async (type: string, max: number, options?: Parameters<Jobs['acceptMany']>[2]) => {
      if (inFlight.length > 0) beside.push({ asked: max, inFlight: Math.max(...inFlight) });
      inFlight.push(max);
      try {
        return await jobs.acceptMany(type, max, options);
      } finally {
        inFlight.splice(inFlight.indexOf(max), 1);
      }
    },
  } as LocalQueueSource;
  const owner = new SlotOwner(1);
  const queue = slotQueue(source, T1, owner);
  t.teardown(() => queue.stop());
  queue.takeReady(0);
  // Runs end at once, 64 in a turn of the event loop, as a main-thread handler's do.
  let inTurn = 0;
  while (owner.started.length < count || owner.running.size > 0) {
    const [id] = owner.running.keys();
    if (id === undefined || ++inTurn === 64) {
      inTurn = 0;
      // A free slot asks the queue again each turn, as the scheduler's pump does.
      owner.takeFromQueue();
      await new Promise((resolve) => setImmediate(resolve));
    } else {
      const job = owner.running.get(id) as Job;
      owner.running.delete(id);
      queue.ended();
      owner.takeFromQueue();
      void queue.finish(job);
    }
  }
  t.is(new Set(owner.started).size, count);
  const tiny = beside.filter(({ asked, inFlight: large }) => asked < large / 8 && asked <= 2);
  t.deepEqual(tiny, [], 'accepts of a job or two beside a large one');
});
