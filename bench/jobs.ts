// Benchmark of the jobs layer, run by `pnpm bench:jobs [--quick] [--drain]`.
//
// 1. add -> accept -> finish cycles per second with 1, 8 and 64 in-process
//    workers, as a ratio of the storage engine's single-key write
//    transactions per second at the same concurrency, measured in the same
//    run (target: see main()), and the latency of each phase of a cycle.
// 2. accept latency with 1,000 and with 1,000,000 pending jobs (100,000 with
//    --quick): the ratio must stay <= 1.5, because an accept reads only the
//    front of the queue. Then add -> start with an idle worker (its accept
//    parked, one job at a time, 5 ms apart): p50 and p99 against the
//    targets (<= 1 ms, <= 5 ms), and the store transactions each job costs
//    (add, finish, the worker's accept that parks, and, unless the add
//    served the parked accept, the accept its wake-up makes: 3, not 4).
//    `--latency` runs only this last part.
// 3. Drain: add N no-op jobs, then accept and finish them all, four ways:
//    one call at a time (a transaction per call: the baseline), 50
//    concurrent workers making single calls (which coalesce into shared
//    transactions), the batch calls (addMany, acceptMany, finishMany), and
//    8 workers sharing a LocalQueue (batches taken in the background,
//    finishes not awaited per job).
//    Reports jobs/s and CPU seconds per 10,000 jobs (user + system, every
//    thread of the process, lmdb's included), with ratios to the baseline.
//    `--drain` runs only this part; `--core DIR` runs it against another
//    checkout's packages/core/src (one without batch calls skips that row),
//    for before/after numbers. `--drain --batches` runs only the batch and
//    LocalQueue rows (no baseline: its ratios are left out), the ones the
//    finish path's cost shows in, for a quick before/after.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LocalQueue, openDatabase, openJobs } from '@jobtree/core';
import type { Database, Jobs } from '@jobtree/core';
import { JobKeys } from '../packages/core/src/jobs/job-keys.js';
import { encodeJobRecord } from '../packages/core/src/jobs/job-record.js';
import { enqueuePending } from '../packages/core/src/jobs/pending-queue.js';
import { type Cell, formatTable, infoRow, RATIO_HEADER, ratioRow } from './table.js';
import { measureThroughput } from './throughput.js';
import { badOption, benchOptions, positiveNumber } from './bench-options.js';

const USAGE = `usage: pnpm bench:jobs [--quick] [--seconds S] [--drain [--batches] [--core DIR]] [--latency]
  --quick          shorter measurements, a queue of 100,000 instead of 1,000,000
  --seconds S      counted seconds per cycle measurement (default 2; --quick 1)
  --drain          only the drain (add N jobs, then accept and finish them four ways)
  --batches        with --drain: only the batch and LocalQueue rows
  --core DIR       with --drain: drain against another checkout's packages/core/src
  --latency        only add -> start with an idle worker`;
const args = benchOptions(USAGE, {
  quick: { type: 'boolean', default: false },
  seconds: { type: 'string' },
  drain: { type: 'boolean', default: false },
  batches: { type: 'boolean', default: false },
  latency: { type: 'boolean', default: false },
  core: { type: 'string' },
});
if (args.drain !== true && (args.batches === true || args.core !== undefined)) badOption(USAGE, '--batches and --core set up --drain: give it too');
if (args.drain === true && args.latency === true) badOption(USAGE, '--drain and --latency each run one part alone: give one');
const quick = args.quick === true;
const seconds = args.seconds === undefined ? (quick ? 1 : 2) : positiveNumber(USAGE, '--seconds', args.seconds);
const bigQueue = quick ? 100_000 : 1_000_000;
const smallQueue = 1_000;
const latencySamples = quick ? 300 : 1_000;
const FILL_BATCH = 5_000;
const TYPE = 'bench';
/** cycles/s as a share of the write tx/s at the same concurrency; see main(). */
const CYCLE_TARGET = 0.25;

const dirs: string[] = [];

async function tempDatabase(): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-jobs-'));
  dirs.push(dir);
  return openDatabase({ path: dir });
}

/** Single-key write transactions per second with `inFlight` concurrent loops: the baseline. */
async function storageWriteRate(inFlight: number): Promise<number> {
  const db = await tempDatabase();
  const value = Buffer.alloc(64, 7);
  try {
    const result = await measureThroughput({ concurrency: inFlight, seconds }, (_loop, n) =>
      db.doTransaction((tx) => tx.set(Buffer.from(`k${n % 100_000}`), value)),
    );
    return result.perSecond;
  } finally {
    await db.close();
  }
}

/** Read-then-write transactions on one key per second, 64 in flight: what a jobs transaction is made of. */
async function storageReadWriteRate(): Promise<number> {
  const db = await tempDatabase();
  const value = Buffer.alloc(64, 7);
  try {
    const result = await measureThroughput({ concurrency: 64, seconds }, (_loop, n) =>
      db.doTransaction(async (tx) => {
        const key = Buffer.from(`k${n % 100_000}`);
        await tx.get(key);
        tx.set(key, value);
      }),
    );
    return result.perSecond;
  } finally {
    await db.close();
  }
}

/** Milliseconds each phase of a cycle took, one sample per cycle (warm-up included). */
interface CyclePhases {
  add: number[];
  accept: number[];
  finish: number[];
}

/** add -> accept -> finish cycles per second with `workers` concurrent loops, and how long each phase took. */
async function cycleRate(workers: number): Promise<{ perSecond: number; phases: CyclePhases }> {
  const db = await tempDatabase();
  const jobs = await openJobs({ database: db });
  const phases: CyclePhases = { add: [], accept: [], finish: [] };
  try {
    await jobs.setTypeTimeout(TYPE, 30);
    const result = await measureThroughput({ concurrency: workers, seconds }, async (loop, n) => {
      const started = performance.now();
      await jobs.add(TYPE, `w${loop}-${n}`, { n });
      const added = performance.now();
      // Another worker may have taken "our" job: any job is fine, the queue
      // is what is measured. Wait briefly rather than spin when it is empty.
      const job = await jobs.accept(TYPE, { timeout: 1_000 });
      const accepted = performance.now();
      phases.add.push(added - started);
      phases.accept.push(accepted - added);
      if (job) {
        await jobs.finish(job, { done: true });
        phases.finish.push(performance.now() - accepted);
      }
    });
    return { perSecond: result.perSecond, phases };
  } finally {
    await jobs.close();
    await db.close();
  }
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return Number((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN).toFixed(2));
}

/** Writes `count` pending jobs straight into the keyspace, in big transactions. */
async function fillQueue(db: Database, count: number): Promise<void> {
  const keys = new JobKeys().forType(TYPE);
  const data = Buffer.from('{"fill":true}');
  const started = performance.now();
  let lastReport = started;
  for (let start = 0; start < count; start += FILL_BATCH) {
    const end = Math.min(count, start + FILL_BATCH);
    await db.doTransaction((tx) => {
      for (let i = start; i < end; i++) {
        const id = `fill-${String(i).padStart(8, '0')}`;
        // Spread over priorities and schedules so the queue has real structure.
        const priority = i % 4;
        const scheduledTime = 1_000 + Math.floor(i / 100);
        tx.set(
          keys.job(id),
          encodeJobRecord({
            state: 'pending',
            seq: undefined,
            lock: undefined,
            resubmit: false,
            continuous: false,
            priority,
            scheduledTime,
            data,
          }),
        );
        enqueuePending(tx, keys, id, priority, scheduledTime);
      }
    });
    const now = performance.now();
    if (now - lastReport > 1_000 || end === count) {
      lastReport = now;
      process.stdout.write(
        `\r  filling ${count.toLocaleString('en-US')} pending jobs: ${end.toLocaleString('en-US')} (${((now - started) / 1000).toFixed(1)} s)`,
      );
    }
  }
  process.stdout.write('\n');
}

/**
 * Median microseconds of one accept. Outside the timing, the job is finished
 * and a new one added, so the queue keeps its length.
 */
async function acceptLatency(pending: number): Promise<number> {
  const db = await tempDatabase();
  const jobs: Jobs = await openJobs({ database: db });
  try {
    await jobs.setTypeTimeout(TYPE, 30);
    await fillQueue(db, pending);
    const samples: number[] = [];
    for (let i = 0; i < latencySamples + 50; i++) {
      const started = performance.now();
      const job = await jobs.accept(TYPE);
      const elapsed = performance.now() - started;
      if (!job) throw new Error('the queue ran dry');
      if (i >= 50) samples.push(elapsed * 1000); // the first 50 warm up
      await jobs.finish(job);
      await jobs.add(TYPE, `refill-${i}`, { refill: true }, { priority: i % 4, scheduledTime: 1_000 + (i % 100) });
    }
    samples.sort((a, b) => a - b);
    return samples[Math.floor(samples.length / 2)] ?? Number.NaN;
  } finally {
    await jobs.close();
    await db.close();
  }
}

/**
 * add -> start with an idle worker: one worker blocked in `accept`, one job
 * added at a time after a 5 ms gap (the worker is parked again by then), from
 * the add's call to the accept's return. Also counts the store's
 * transactions per job (add, the worker's accepts, finish).
 */
async function idleStartLatency(): Promise<{ p50: number; p99: number; transactionsPerJob: number }> {
  const inner = await tempDatabase();
  let transactions = 0;
  const counted: Database = {
    kind: inner.kind,
    doTransaction(body, options) {
      transactions += 1;
      return inner.doTransaction(body, options);
    },
    close: () => inner.close(),
  };
  const jobs = await openJobs({ database: counted });
  const stop = new AbortController();
  const samples: number[] = [];
  try {
    await jobs.setTypeTimeout(TYPE, 30);
    let onStart: ((id: string) => void) | undefined;
    const worker = (async () => {
      for (;;) {
        const job = await jobs.accept(TYPE, { timeout: 60_000, signal: stop.signal });
        if (job === undefined) return;
        onStart?.(job.id);
        await jobs.finish(job);
      }
    })();
    let countFrom = 0;
    for (let i = -50; i < latencySamples; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (i === 0) countFrom = transactions;
      const id = `idle-${i}`;
      const startedAt = new Promise<number>((resolve) => {
        onStart = (taken) => {
          if (taken === id) resolve(performance.now());
        };
      });
      const started = performance.now();
      await jobs.add(TYPE, id, { i });
      const at = await startedAt;
      if (i >= 0) samples.push(at - started); // the first 50 warm up
    }
    const perJob = (transactions - countFrom) / latencySamples;
    stop.abort();
    await worker;
    return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), transactionsPerJob: Number(perJob.toFixed(2)) };
  } finally {
    stop.abort();
    await jobs.close();
    await inner.close();
  }
}

async function latencySection(): Promise<void> {
  const idle = await idleStartLatency();
  console.log(
    formatTable(
      ['add -> start, idle worker (accept parked)', 'measured', 'target', 'result'],
      [
        ['p50, ms', idle.p50, '<= 1', idle.p50 <= 1 ? 'pass' : 'FAIL'],
        ['p99, ms', idle.p99, '<= 5', idle.p99 <= 5 ? 'pass' : 'FAIL'],
        ['store transactions per job (add, accepts, finish)', idle.transactionsPerJob, '3', idle.transactionsPerJob <= 3.05 ? 'pass' : 'FAIL'],
      ],
    ),
  );
}

/** The part of the jobs API the drain uses; batch calls are missing from older checkouts. */
interface DrainJobs {
  setTypeTimeout(type: string, seconds: number): Promise<void>;
  add(type: string, id: string, data?: unknown): Promise<unknown>;
  accept(type: string, options?: { timeout?: number }): Promise<{ id: string } | undefined>;
  finish(job: never, data?: unknown): Promise<unknown>;
  pendingCount(type: string): Promise<number>;
  close(): Promise<void>;
  addMany?(type: string, jobs: { id: string; data?: unknown }[]): Promise<unknown>;
  acceptMany?(type: string, max: number): Promise<{ id: string }[]>;
  finishMany?(items: { job: never }[]): Promise<{ status: string }[]>;
}

type OpenDrainJobs = (database: Database) => Promise<DrainJobs>;

/** The local queue, as far as the drain uses it; missing from older checkouts. */
interface DrainQueue {
  take(): Promise<{ id: string } | undefined>;
  finish(job: never, data?: unknown): Promise<unknown>;
  stop(): Promise<void>;
}
type NewDrainQueue = (jobs: DrainJobs, type: string, options: { size: number }) => DrainQueue;

interface DrainResult {
  perSecond: number;
  cpuPer10k: number;
}

/** Runs `drain` over `count` fresh jobs and measures wall time and process CPU. */
async function measureDrain(
  open: OpenDrainJobs,
  count: number,
  drain: (jobs: DrainJobs, ids: string[]) => Promise<number>,
): Promise<DrainResult> {
  const db = await tempDatabase();
  const jobs = await open(db);
  try {
    await jobs.setTypeTimeout(TYPE, 30);
    const ids = Array.from({ length: count }, (_, i) => `d${i}`);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const finished = await drain(jobs, ids);
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    if (finished !== count || (await jobs.pendingCount(TYPE)) !== 0) {
      throw new Error(`drain finished ${finished} of ${count} jobs`);
    }
    return { perSecond: count / seconds, cpuPer10k: ((used.user + used.system) / 1e6) * (10_000 / count) };
  } finally {
    await jobs.close();
    await db.close();
  }
}

/** One call at a time: every add, accept and finish is its own transaction. */
async function drainOneByOne(jobs: DrainJobs, ids: string[]): Promise<number> {
  for (const id of ids) await jobs.add(TYPE, id, { id });
  let finished = 0;
  for (let job = await jobs.accept(TYPE); job; job = await jobs.accept(TYPE)) {
    await jobs.finish(job as never, { ok: true });
    finished += 1;
  }
  return finished;
}

/** `workers` loops of single calls at once: adds, then accept -> finish. */
async function drainConcurrent(jobs: DrainJobs, ids: string[], workers: number): Promise<number> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < ids.length) {
        const id = ids[next++] as string;
        await jobs.add(TYPE, id, { id });
      }
    }),
  );
  let finished = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let job = await jobs.accept(TYPE); job; job = await jobs.accept(TYPE)) {
        await jobs.finish(job as never, { ok: true });
        finished += 1;
      }
    }),
  );
  return finished;
}

/** The batch calls: addMany of 1,000, then acceptMany(500) -> finishMany, two loops at once. */
async function drainBatches(jobs: DrainJobs, ids: string[]): Promise<number> {
  const { addMany, acceptMany, finishMany } = jobs;
  if (!addMany || !acceptMany || !finishMany) throw new Error('no batch calls in this checkout');
  const adds: Promise<unknown>[] = [];
  for (let start = 0; start < ids.length; start += 1_000) {
    adds.push(addMany.call(jobs, TYPE, ids.slice(start, start + 1_000).map((id) => ({ id, data: { id } }))));
  }
  await Promise.all(adds);
  let finished = 0;
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      for (let batch = await acceptMany.call(jobs, TYPE, 500); batch.length > 0; batch = await acceptMany.call(jobs, TYPE, 500)) {
        const outcomes = await finishMany.call(
          jobs,
          batch.map((job) => ({ job: job as never, data: { ok: true } })),
        );
        finished += outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
      }
    }),
  );
  return finished;
}

/** addMany of 1,000, then 8 workers sharing a local queue of 500; finishes are not awaited per job. */
async function drainLocalQueue(jobs: DrainJobs, ids: string[], newQueue: NewDrainQueue): Promise<number> {
  const { addMany } = jobs;
  if (!addMany) throw new Error('no batch calls in this checkout');
  for (let start = 0; start < ids.length; start += 1_000) {
    await addMany.call(jobs, TYPE, ids.slice(start, start + 1_000).map((id) => ({ id, data: { id } })));
  }
  const queue = newQueue(jobs, TYPE, { size: 500 });
  let ran = 0;
  let finished = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let job = await queue.take(); job; job = await queue.take()) {
        ran += 1;
        void queue.finish(job as never, { ok: true }).then(() => {
          finished += 1;
        });
        if (ran === ids.length) void queue.stop();
      }
    }),
  );
  await queue.stop();
  return finished;
}

async function drainSection(): Promise<void> {
  let open: OpenDrainJobs = (database) => openJobs({ database }) as Promise<DrainJobs>;
  let newQueue: NewDrainQueue | undefined = (jobs, type, options) =>
    new LocalQueue(jobs as unknown as Jobs, type, options) as unknown as DrainQueue;
  if (args.core !== undefined) {
    const module = (await import(pathToFileURL(resolve(args.core, 'index.ts')).href)) as {
      openJobs(options: { database: Database }): Promise<DrainJobs>;
      LocalQueue?: new (jobs: DrainJobs, type: string, options: { size: number }) => DrainQueue;
    };
    open = (database) => module.openJobs({ database });
    const Queue = module.LocalQueue;
    newQueue = Queue === undefined ? undefined : (jobs, type, options) => new Queue(jobs, type, options);
    console.log(`drain against ${args.core}`);
  }
  // Warm-up, not counted: the first drain of a process pays for JIT and lmdb's first map growth.
  await measureDrain(open, 500, (jobs, ids) => drainConcurrent(jobs, ids, 8));
  const big = quick ? 5_000 : 20_000;
  // One call at a time is slow (three durable commits per job): fewer jobs, same per-job figures.
  const small = quick ? 1_000 : 3_000;
  const baseline = args.batches ? undefined : await measureDrain(open, small, drainOneByOne);
  const rows: Cell[][] =
    baseline === undefined ? [] : [['one call at a time (a transaction each)', small, baseline.perSecond, 1, baseline.cpuPer10k, 1]];
  /** A drain's row: its rate and CPU, and both as ratios of one call at a time. */
  const drainRow = (label: string, count: number, result: DrainResult): Cell[] => [
    label,
    count,
    result.perSecond,
    baseline === undefined ? '-' : result.perSecond / baseline.perSecond,
    result.cpuPer10k,
    baseline === undefined ? '-' : result.cpuPer10k / baseline.cpuPer10k,
  ];
  for (const workers of args.batches ? [] : [1, 8, 50]) {
    const count = workers === 1 ? small : big;
    rows.push(drainRow(`${workers} concurrent workers, single calls`, count, await measureDrain(open, count, (jobs, ids) => drainConcurrent(jobs, ids, workers))));
  }
  const probe = await open(await tempDatabase());
  const hasBatches = typeof probe.addMany === 'function';
  await probe.close();
  if (hasBatches) {
    rows.push(drainRow('addMany / acceptMany(500) / finishMany', big, await measureDrain(open, big, drainBatches)));
  }
  if (hasBatches && newQueue !== undefined) {
    const queue = newQueue;
    rows.push(drainRow('addMany / LocalQueue(500), 8 workers', big, await measureDrain(open, big, (jobs, ids) => drainLocalQueue(jobs, ids, queue))));
  }
  console.log(
    formatTable(['drain: add + accept + finish', 'jobs', 'jobs/s', 'x baseline', 'CPU s / 10k jobs', 'x baseline'], rows),
  );
}

async function main(): Promise<void> {
  if (args.drain) {
    await drainSection();
    return;
  }
  if (args.latency) {
    await latencySection();
    return;
  }
  console.log(`jobs benchmark (${quick ? 'quick' : 'full'}): ${seconds} s per throughput run\n`);
  // The reference rate of the issue: single-key write transactions, 64 in
  // flight. Baselines are measured next to each run because the machine is
  // shared and its speed drifts.
  //
  // Cycle target: a cycle is three transactions (add, accept, finish), each
  // waiting for one durable commit, and group commit lets N workers share
  // each commit just as N single-key writers do. So N workers should reach
  // a third of the write rate at N in flight: 1/3 is the design's ceiling
  // (accepts of one process share a transaction, which only helps). A jobs
  // transaction does more than a blind write (one or two reads, three or
  // four writes, JSON), so the target allows it a quarter more time: 0.25,
  // the same at every concurrency, since group commit is what the design
  // relies on to scale. (The earlier 0.1 was set to what passed, not to
  // what the design should reach.)
  const reference = await storageWriteRate(64);
  const rows: Cell[][] = [
    infoRow('storage 1-key write tx/s, 64 in flight (reference)', reference),
    infoRow('storage 1-key read+write tx/s, 64 in flight', await storageReadWriteRate(), reference),
  ];
  // Where a cycle's time goes: each phase waits for (at least) one durable
  // commit, so the three should be alike; a slow phase points at the layer.
  const phaseRows: Cell[][] = [];
  for (const workers of [1, 8, 64]) {
    const baseline = workers === 64 ? reference : await storageWriteRate(workers);
    const { perSecond: rate, phases } = await cycleRate(workers);
    for (const [phase, samples] of Object.entries(phases)) {
      phaseRows.push([`${phase}, ${workers} workers`, percentile(samples, 0.5), percentile(samples, 0.9), percentile(samples, 0.99)]);
    }
    if (workers !== 64) rows.push(infoRow(`storage 1-key write tx/s, ${workers} in flight`, baseline));
    rows.push(ratioRow({ metric: `cycles/s, ${workers} workers vs ${workers} in flight`, value: rate, baseline, target: CYCLE_TARGET }));
    rows.push(infoRow(`cycles/s, ${workers} workers vs the 64-in-flight reference`, rate, reference));
  }
  console.log(formatTable(RATIO_HEADER, rows));
  console.log();
  console.log(formatTable(['cycle phase latency, ms', 'p50', 'p90', 'p99'], phaseRows));
  console.log();

  const small = await acceptLatency(smallQueue);
  const big = await acceptLatency(bigQueue);
  const ratio = big / small;
  console.log();
  console.log(
    formatTable(
      ['metric', `${bigQueue.toLocaleString('en-US')} pending`, `${smallQueue.toLocaleString('en-US')} pending`, 'ratio', 'target', 'result'],
      [['accept latency, median µs', big, small, Number(ratio.toFixed(2)), '<= 1.5', ratio <= 1.5 ? 'pass' : 'FAIL']],
    ),
  );
  console.log();
  await latencySection();
  console.log();
  await drainSection();
}

try {
  await main();
} finally {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}
