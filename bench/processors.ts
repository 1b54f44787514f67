// Benchmark of job processors, run by `pnpm bench:processors [--quick]`.
//
// 1. Durable end-to-end no-op jobs per second (a burst of addMany calls ->
//    handler in a worker thread -> finished, every step committed), as a ratio of raw
//    piscina no-op tasks per second on as many threads in the same run
//    (target >= 1: jobs travel to the threads in batches, tasks one by one).
//    For context, the same burst drained through the store alone, with no
//    handlers: the ceiling the store sets on this machine. And the same
//    jobs on maxJobs 8 (few slots: what the scheduler's local queue of
//    accepted jobs is for, so a freed slot never waits for a take's commit).
//    And the same drains with the handler on the main thread (a function,
//    `runIn: 'main'`), beside the core's LocalQueue drained by plain loops
//    with no scheduler: what in-process handlers could reach.
// 2. add -> handler start latency with an idle scheduler, p50 and p99
//    (targets 1 ms and 5 ms): from before `add` to the handler's first line,
//    and leg by leg: the add's durable commit, the scheduler's waiting accept
//    (woken by the add, its own commit durable), the hop into a lane's
//    message, and the lane starting the handler. Two disk flushes are most of it.
// 3. 1,000 continuous jobs (300 with --quick) on maxJobs 50: reschedule
//    cycles until every job has had a turn, against the cycles rotation
//    needs at maxChurn 20 (target: within 1.5 times that).
//
// `--drain-only [--max-jobs N] [--main]` runs the end-to-end drain of 1. alone and
// prints the main thread's CPU per job and every thread's CPU in it
// (steadier than the rate on a busy machine) and its span on the clock of
// `node --cpu-prof`, to read a profile for the drain alone.
// `--latency-only` runs 2. alone.

import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Jobs, LocalQueue, openJobs } from '@jobtree/core';
import { Piscina } from 'piscina';
import { type Scheduler, startScheduler } from '../packages/jobtree/src/processors/index.js';
import { type Cell, formatTable, infoRow, RATIO_HEADER, ratioRow } from './table.js';
import { badOption, benchOptions, positiveInteger } from './bench-options.js';

const USAGE = `usage: pnpm bench:processors [--quick] [--drain-only [--max-jobs N] [--main]] [--latency-only]
  --quick          smaller drains, 200 latency samples, 300 rotating jobs
  --drain-only     only the end-to-end drain (e.g. under node --cpu-prof), with its CPU per job
  --max-jobs N     with --drain-only: the scheduler's maxJobs (default 1,000)
  --main           with --drain-only: the handler on the main thread
  --latency-only   only add -> handler start with an idle scheduler`;
const args = benchOptions(USAGE, {
  quick: { type: 'boolean', default: false },
  'drain-only': { type: 'boolean', default: false },
  'max-jobs': { type: 'string' },
  main: { type: 'boolean', default: false },
  'latency-only': { type: 'boolean', default: false },
});
if (args['drain-only'] !== true && (args['max-jobs'] !== undefined || args.main === true)) badOption(USAGE, '--max-jobs and --main set up --drain-only: give it too');
if (args['drain-only'] === true && args['latency-only'] === true) badOption(USAGE, '--drain-only and --latency-only each run one part alone: give one');
const maxJobs = args['max-jobs'] === undefined ? undefined : positiveInteger(USAGE, '--max-jobs', args['max-jobs']);
const quick = args.quick === true;
const THREADS = 2;
const DRAIN_JOBS = quick ? 10_000 : 40_000;
const FEW_SLOTS = 8;
const PISCINA_TASKS = quick ? 10_000 : 40_000;
const LATENCY_SAMPLES = quick ? 200 : 1_000;
const ROTATION_JOBS = quick ? 300 : 1_000;
const ROTATION_SLOTS = 50;
const MAX_CHURN = 20;
const fixture = (name: string) => new URL(`./processors-fixtures/${name}`, import.meta.url);

const dirs: string[] = [];
async function tempJobs(): Promise<Jobs> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-processors-'));
  dirs.push(dir);
  return openJobs({ path: dir });
}

/** Raw piscina no-op tasks per second, all submitted at once. */
async function piscinaRate(): Promise<number> {
  const pool = new Piscina({ filename: fixture('piscina-noop.mjs').href, minThreads: THREADS, maxThreads: THREADS });
  try {
    await Promise.all(Array.from({ length: 1_000 }, () => pool.run(null))); // warm up
    const started = performance.now();
    await Promise.all(Array.from({ length: PISCINA_TASKS }, () => pool.run(null)));
    return PISCINA_TASKS / ((performance.now() - started) / 1000);
  } finally {
    await pool.destroy();
  }
}

function waitFinished(scheduler: Scheduler, count: number): Promise<void> {
  return new Promise((resolve) => {
    let left = count;
    const listener = (): void => {
      if (--left === 0) {
        scheduler.events.off('job:finished', listener);
        resolve();
      }
    };
    scheduler.events.on('job:finished', listener);
  });
}

/** Where a drain ran on the profiler's clock (µs), and the CPU time of the main thread and of every thread in it (ms). */
interface DrainWindow {
  from?: bigint;
  to?: bigint;
  cpuMs?: number;
  /** CPU ms by thread (`main`, or name#tid) in the drain. */
  threads?: Map<string, number>;
}

/** A thread's CPU time so far in ms (Linux: its /proc task entry, at the kernel's tick); NaN elsewhere. */
function threadCpuMs(tid: number | string = process.pid): number {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the name: utime is field 14 and stime field 15 (fields[11], fields[12]), in ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU ms of every thread of this process, by `main` or name#tid (Linux; empty elsewhere). */
function threadsCpuMs(): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'latin1').trim();
      const label = tid === String(process.pid) ? 'main' : `${name}#${tid}`;
      byName.set(label, (byName.get(label) ?? 0) + threadCpuMs(tid));
    }
  } catch {
    // not Linux: no split
  }
  return byName;
}

/**
 * End-to-end no-op jobs per second, adds included, with `maxJobs` handlers
 * at most running at once: in handler threads, or (`main`) a function on
 * the main thread.
 */
async function drainRate(maxJobs = 1_000, window: DrainWindow = {}, main = false): Promise<number> {
  const jobs = await tempJobs();
  await jobs.setTypeTimeout('noop', 30);
  const scheduler = main
    ? await startScheduler({ jobs, type: 'noop', handler: () => null, maxJobs })
    : await startScheduler({ jobs, type: 'noop', handler: fixture('noop.ts'), threads: THREADS, maxJobs });
  try {
    // Warm the threads up (they load the handler module on first use).
    const warm = waitFinished(scheduler, 200);
    await jobs.addMany('noop', Array.from({ length: 200 }, (_, i) => ({ id: `w${i}` })));
    await warm;
    const done = waitFinished(scheduler, DRAIN_JOBS);
    const started = performance.now();
    window.from = process.hrtime.bigint() / 1000n;
    const cpuBefore = threadCpuMs();
    const threadsBefore = threadsCpuMs();
    // A burst of producers: every addMany in flight at once (the store commits them in groups).
    const adds: Promise<unknown>[] = [];
    for (let i = 0; i < DRAIN_JOBS; i += 1_000) {
      adds.push(jobs.addMany('noop', Array.from({ length: Math.min(1_000, DRAIN_JOBS - i) }, (_, k) => ({ id: `j${i + k}` }))));
    }
    await Promise.all(adds);
    await done;
    window.to = process.hrtime.bigint() / 1000n;
    window.cpuMs = threadCpuMs() - cpuBefore;
    window.threads = new Map([...threadsCpuMs()].map(([name, ms]) => [name, ms - (threadsBefore.get(name) ?? 0)]));
    return DRAIN_JOBS / ((performance.now() - started) / 1000);
  } finally {
    await scheduler.stop();
    await jobs.close();
  }
}

/**
 * The store alone, for context: the same burst of addMany calls drained by
 * acceptMany/finishMany loops with no handler at all (what the scheduler's
 * end-to-end rate is bounded by).
 */
async function storeOnlyRate(): Promise<number> {
  const jobs = await tempJobs();
  await jobs.setTypeTimeout('store', 30);
  try {
    const started = performance.now();
    const adds: Promise<unknown>[] = [];
    for (let i = 0; i < DRAIN_JOBS; i += 1_000) {
      adds.push(jobs.addMany('store', Array.from({ length: Math.min(1_000, DRAIN_JOBS - i) }, (_, k) => ({ id: `j${i + k}` }))));
    }
    let done = 0;
    const drainer = async (): Promise<void> => {
      while (done < DRAIN_JOBS) {
        const taken = await jobs.acceptMany('store', 1_000, { timeout: 1_000 });
        await jobs.finishMany(taken.map((job) => ({ job })));
        done += taken.length;
      }
    };
    await Promise.all([...adds, drainer(), drainer()]);
    return DRAIN_JOBS / ((performance.now() - started) / 1000);
  } finally {
    await jobs.close();
  }
}

/**
 * The same burst drained through the core's LocalQueue by `workers` loops of
 * take -> finish (no handler call, no scheduler): the engine under
 * in-process handlers.
 */
async function localQueueRate(workers: number): Promise<number> {
  const jobs = await tempJobs();
  await jobs.setTypeTimeout('queue', 30);
  const queue = new LocalQueue(jobs, 'queue', { size: 500 });
  try {
    const started = performance.now();
    const adds: Promise<unknown>[] = [];
    for (let i = 0; i < DRAIN_JOBS; i += 1_000) {
      adds.push(jobs.addMany('queue', Array.from({ length: Math.min(1_000, DRAIN_JOBS - i) }, (_, k) => ({ id: `j${i + k}` }))));
    }
    let finished = 0;
    let allDone: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      allDone = resolve;
    });
    const worker = async (): Promise<void> => {
      for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
        void queue.finish(job).then(() => {
          if (++finished === DRAIN_JOBS) allDone();
        });
      }
    };
    const workersDone = Promise.all(Array.from({ length: workers }, worker));
    await Promise.all(adds);
    await done;
    const rate = DRAIN_JOBS / ((performance.now() - started) / 1000);
    await queue.stop();
    await workersDone;
    return rate;
  } finally {
    await jobs.close();
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** The legs of add -> handler start, in ms (epoch clock, comparable across threads). */
const LEGS = ['add committed (durable)', 'scheduler accept returned', 'sent to a lane', 'handler started'] as const;

/** epoch ms with sub-millisecond precision. */
const epochNow = (): number => performance.timeOrigin + performance.now();

/** `jobs`, with the moment each acceptMany that took jobs returned recorded in `at.accepted`. */
function timedAccepts(jobs: Jobs, at: { accepted: number }): Jobs {
  return new Proxy(jobs, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'acceptMany') {
        return async (...args: Parameters<Jobs['acceptMany']>) => {
          const taken = await target.acceptMany(...args);
          if (taken.length > 0) at.accepted = epochNow();
          return taken;
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** add -> handler start, one job at a time on an idle scheduler, in total and leg by leg. */
async function startLatency(): Promise<{ p50: number; p99: number; legs: { name: string; p50: number; p99: number }[] }> {
  const jobs = await tempJobs();
  await jobs.setTypeTimeout('lat', 30);
  const at = { accepted: 0, sent: 0 };
  const scheduler = await startScheduler({ jobs: timedAccepts(jobs, at), type: 'lat', handler: fixture('started-at.ts'), threads: THREADS });
  // job:started is emitted as the job is put in its lane's message.
  scheduler.events.on('job:started', () => {
    at.sent = epochNow();
  });
  const samples: number[] = [];
  const legs: number[][] = LEGS.map(() => []);
  try {
    for (let i = -20; i < LATENCY_SAMPLES; i++) {
      const id = `l${i}`;
      const finished = new Promise<void>((resolve) => {
        const listener = (event: { id: string }): void => {
          if (event.id !== id) return;
          scheduler.events.off('job:finished', listener);
          resolve();
        };
        scheduler.events.on('job:finished', listener);
      });
      // Let the scheduler settle back into its blocking accept.
      await new Promise((resolve) => setTimeout(resolve, 5));
      const before = epochNow();
      await jobs.add('lat', id);
      const added = epochNow();
      await finished;
      // The handler's result, stored apart from the job's data.
      const data = (await jobs.getJob('lat', id))?.result as { startedAt: number };
      if (i < 0) continue; // the first 20 warm up
      samples.push(data.startedAt - before);
      const moments = [before, added, at.accepted, at.sent, data.startedAt];
      for (const [leg, list] of legs.entries()) list.push((moments[leg + 1] as number) - (moments[leg] as number));
    }
  } finally {
    await scheduler.stop();
    await jobs.close();
  }
  const sorted = (list: number[]): number[] => list.sort((a, b) => a - b);
  sorted(samples);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    legs: LEGS.map((name, leg) => {
      const list = sorted(legs[leg] as number[]);
      return { name, p50: percentile(list, 50), p99: percentile(list, 99) };
    }),
  };
}

/** Cycles until every one of many continuous jobs has run, and the cycles rotation needs. */
async function rotationTurns(): Promise<{ cycles: number; expected: number; everyJob: boolean }> {
  const jobs = await tempJobs();
  await jobs.setTypeTimeout('cont', 30);
  const scheduler = await startScheduler({
    jobs,
    type: 'cont',
    handler: fixture('continuous.ts'),
    threads: THREADS,
    maxJobs: ROTATION_SLOTS,
    maxChurn: MAX_CHURN,
    interval: 3_600_000, // cycles are run by hand below
  });
  const started = new Set<string>();
  scheduler.events.on('job:started', (event) => started.add(event.id));
  const expected = Math.ceil((ROTATION_JOBS - ROTATION_SLOTS) / MAX_CHURN);
  let cycles = 0;
  try {
    await jobs.addMany('cont', Array.from({ length: ROTATION_JOBS }, (_, i) => ({ id: `c${i}`, continuous: true })));
    while (started.size < ROTATION_SLOTS) await new Promise((resolve) => setTimeout(resolve, 10));
    while (started.size < ROTATION_JOBS && cycles < expected * 3) {
      await scheduler.reschedule();
      cycles++;
      // Let the rotated jobs' handlers end and their jobs reach the queue again.
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  } finally {
    await scheduler.stop();
    await jobs.close();
  }
  return { cycles, expected, everyJob: started.size === ROTATION_JOBS };
}

function printLatency(latency: Awaited<ReturnType<typeof startLatency>>): void {
  console.log(
    formatTable(
      ['add -> handler start, idle scheduler, ms', 'measured', 'target', 'result'],
      [
        ['p50', latency.p50, '<= 1', latency.p50 <= 1 ? 'pass' : 'FAIL'],
        ['p99', latency.p99, '<= 5', latency.p99 <= 5 ? 'pass' : 'FAIL'],
      ],
    ),
  );
  console.log();
  console.log(
    formatTable(
      ['the legs of add -> handler start (each from the one before), ms', 'p50', 'p99'],
      latency.legs.map((leg) => [leg.name, leg.p50, leg.p99]),
    ),
  );
}

async function main(): Promise<void> {
  console.log(`processors bench${quick ? ' (quick)' : ''}: ${THREADS} handler threads`);
  if (args['drain-only'] === true) {
    const window: DrainWindow = {};
    const rate = await drainRate(maxJobs, window, args.main === true);
    const cpuPerJob = ((window.cpuMs ?? Number.NaN) * 1000) / DRAIN_JOBS;
    console.log(
      `no-op jobs/s end to end (${DRAIN_JOBS}): ${Math.round(rate)}; main thread CPU ${cpuPerJob.toFixed(1)} µs/job; drain from ${window.from} to ${window.to} µs`,
    );
    const threads = [...(window.threads ?? [])].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
    console.log(`CPU ms in the drain by thread: ${threads.map(([name, ms]) => `${name} ${ms}`).join(', ')}`);
    return;
  }
  if (args['latency-only'] === true) {
    printLatency(await startLatency());
    return;
  }
  const baseline = await piscinaRate();
  const drain = await drainRate();
  const fewSlots = await drainRate(FEW_SLOTS);
  const mainDrain = await drainRate(1_000, {}, true);
  const mainFewSlots = await drainRate(FEW_SLOTS, {}, true);
  const queueDrain = await localQueueRate(1_000);
  const queueFewSlots = await localQueueRate(FEW_SLOTS);
  const storeOnly = await storeOnlyRate();
  const rows: Cell[][] = [
    ratioRow({ metric: `no-op jobs/s end to end (${DRAIN_JOBS}) vs raw piscina no-op tasks/s`, value: drain, baseline, target: 1 }),
    infoRow(`the same jobs on maxJobs ${FEW_SLOTS} (jobs/s)`, fewSlots, baseline),
    infoRow('the same jobs, handler on the main thread (jobs/s) vs in threads', mainDrain, drain),
    infoRow(`the same on maxJobs ${FEW_SLOTS}, handler on the main thread (jobs/s) vs in threads`, mainFewSlots, fewSlots),
    infoRow("the same jobs through the core's LocalQueue, 1,000 take -> finish loops (jobs/s) vs main thread", queueDrain, mainDrain),
    infoRow(`the same through the LocalQueue, ${FEW_SLOTS} loops (jobs/s) vs main thread`, queueFewSlots, mainFewSlots),
    infoRow('the same jobs through the store alone, no handlers (jobs/s)', storeOnly, baseline),
    infoRow('end to end vs the store alone', drain, storeOnly),
  ];
  console.log(formatTable(RATIO_HEADER, rows));
  console.log();
  printLatency(await startLatency());
  const rotation = await rotationTurns();
  console.log();
  console.log(
    formatTable(
      [`${ROTATION_JOBS} continuous jobs on maxJobs ${ROTATION_SLOTS}, maxChurn ${MAX_CHURN}`, 'cycles', 'expected', 'target', 'result'],
      [
        [
          rotation.everyJob ? 'every job had a turn after' : 'NOT every job had a turn after',
          rotation.cycles,
          rotation.expected,
          `<= ${Math.ceil(rotation.expected * 1.5)}`,
          rotation.everyJob && rotation.cycles <= rotation.expected * 1.5 ? 'pass' : 'FAIL',
        ],
      ],
    ),
  );
}

try {
  await main();
} finally {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}
