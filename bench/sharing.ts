// Benchmark of several processes on one embedded store, run by
// `pnpm bench:sharing [--quick]`. Every figure is a ratio of two
// measurements of the same run, or a count checked in it:
//
// 1. add -> handler start, p50 and p99, one job at a time with an idle
//    worker (targets 1 ms and 5 ms): the worker (app.process) in another
//    process, a client of the adding owner, against the worker in the
//    owner's own process, sample by sample in turn on two stores; each with
//    the handler on the worker's main thread (a plain function, which runs
//    there by default) and in a handler thread (a defineHandler module,
//    `threads: 1`), and each with durability flush and deferred. And leg
//    by leg: the add's answer (its commit durable, or written with
//    deferred), then the handler's start measured from that answer (the
//    waiting accept is handed the job once the add's commit is readable,
//    before its sync: with 'flush' the handler usually starts first, and
//    this leg is negative). Then the machine itself after the same pause
//    (idle-wake.ts): a fixed CPU slice and a worker-thread round trip, whose
//    p99 is what any code that runs first after a pause pays here.
// 2. A drain of 100,000 pending no-op jobs (20,000 with --quick) with
//    app.process in a client process, against the same drain in the owner
//    process (target >= 0.8): jobs per second from the moment the worker
//    has finished its first 1,000 (its threads up and warm) to the last job
//    finished; the two in turn, 2 rounds each (3 with --quick), the ratio
//    the median of the per-round ratios.
// 3. Four adder processes (Node cluster) and two worker processes on one
//    store: 100,000 jobs (20,000 with --quick) added with `add` and run by
//    app.process; jobs per second from the first add to the last finish,
//    and every job finished exactly once (the store says finished, the
//    workers' schedulers report as many finishes as there are jobs).
//
// `--only latency|drain|fleet` runs one part alone; to read a profile of
// it, run `node --cpu-prof --import tsx bench/sharing.ts --only drain` with
// BENCH_CHILD_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' for the processes it
// starts. Absolute latencies depend on the disk's flush with the default
// durability (the add is durable before it answers), not with `deferred`
// (it answers once written, and lmdb flushes it right after): part 1 runs
// both; the comparison with the same process is what this measures of the
// sharing layer. Every process it starts is stopped before
// it ends, and its data directories removed.

import { type ChildProcess, fork } from 'node:child_process';
import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Jobs, type StoreDurability, openJobs } from '@jobtree/core';
import { type JobsApp, startJobs } from 'jobtree';
import { badOption, benchOptions } from './bench-options.js';
import { type IdleWake, idleWakeRows, measureIdleWake } from './idle-wake.js';
import type { SharingChildMessage } from './sharing-fixtures/sharing-child.js';
import { type Cell, formatTable, infoRow, RATIO_HEADER } from './table.js';

/** Where the worker's handler runs: a plain function on its main thread, or a defineHandler module in a handler thread. */
type HandlerPlace = 'main' | 'threads';

const USAGE = `usage: pnpm bench:sharing [--quick] [--only latency|drain|fleet]
  --quick          200 latency samples, drains of 20,000 jobs (3 rounds), a fleet of 20,000 jobs
  --only PART      one part alone: latency (add -> start, another process vs the same),
                   drain (a client's app.process drain vs the owner's) or fleet (4 adders, 2 workers)`;
const args = benchOptions(USAGE, {
  quick: { type: 'boolean', default: false },
  only: { type: 'string' },
});
const quick = args.quick === true;
const only = args.only;
if (only !== undefined && !['latency', 'drain', 'fleet'].includes(only)) badOption(USAGE, `--only takes latency, drain or fleet, not ${only}`);
const LATENCY_SAMPLES = quick ? 200 : 1_000;
/** The pause before each latency sample (the worker settles back into its waiting accept). */
const LATENCY_GAP_MS = 5;
/** The store durabilities part 1 compares (see docs/durability.md). */
const DURABILITIES: readonly StoreDurability[] = ['flush', 'deferred'];
/** Where part 1's handlers run, and how the report names each. */
const HANDLER_PLACES: readonly HandlerPlace[] = ['main', 'threads'];
const PLACE_LABELS: Record<HandlerPlace, string> = { main: 'main-thread handler', threads: 'thread handler' };
const DRAIN_JOBS = quick ? 20_000 : 100_000;
/** Rounds of the two drains, in turn (owner, client, owner, client, ...). */
const DRAIN_ROUNDS = quick ? 3 : 2;
const FLEET_JOBS = quick ? 20_000 : 100_000;
const ADDERS = 4;
const WORKERS = 2;
const LANE_THREADS = 2;
const CHILD = fileURLToPath(new URL('./sharing-fixtures/sharing-child.ts', import.meta.url));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const epochNow = (): number => performance.timeOrigin + performance.now();
const progress = (line: string): void => console.log(`  ${line}`);

const dirs: string[] = [];
const children = new Set<Child>();

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-sharing-'));
  dirs.push(dir);
  return dir;
}

/** A forked process of the benchmark (child_process or cluster), its messages, and its end. */
class Child {
  readonly messages: SharingChildMessage[] = [];
  readonly exited: Promise<void>;
  readonly #waiters = new Set<() => void>();

  constructor(readonly process: ChildProcess | ClusterWorker) {
    const emitter = process as NodeJS.EventEmitter;
    emitter.on('message', (message: SharingChildMessage) => {
      this.messages.push(message);
      for (const wake of this.#waiters) wake();
    });
    this.exited = new Promise((resolve) => emitter.once('exit', () => resolve()));
    children.add(this);
    void this.exited.then(() => {
      children.delete(this);
      for (const wake of this.#waiters) wake();
    });
  }

  send(message: string): void {
    (this.process as ChildProcess).send?.(message);
  }

  /** The first message of `kind` (waits for it; rejects if the process exits first). */
  async next<K extends SharingChildMessage['kind']>(kind: K, timeoutMs = 120_000): Promise<Extract<SharingChildMessage, { kind: K }>> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const index = this.messages.findIndex((message) => message.kind === kind);
      if (index >= 0) return this.messages.splice(index, 1)[0] as Extract<SharingChildMessage, { kind: K }>;
      if (!children.has(this)) throw new Error(`a benchmark process exited before sending ${kind}`);
      if (performance.now() > deadline) throw new Error(`a benchmark process sent no ${kind} in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.#waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, 1_000);
        this.#waiters.add(wake);
      });
    }
  }

  /** Asks it to close its app and exit; kills it after 15 s. */
  async stop(): Promise<void> {
    if (!children.has(this)) return;
    this.send('stop');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Node's flags for the benchmark's processes: tsx, and what BENCH_CHILD_NODE_ARGS adds (`--cpu-prof --cpu-prof-dir=DIR` to profile them). */
const childExecArgv = ['--import', 'tsx', ...(process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '')];

function forkChild(args: string[]): Child {
  return new Child(fork(CHILD, args, { execArgv: childExecArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
}

function forkClusterChild(args: string[]): Child {
  cluster.setupPrimary({ exec: CHILD, args, execArgv: childExecArgv, silent: false });
  return new Child(cluster.fork());
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function withApp<T>(body: (app: JobsApp, path: string) => Promise<T>): Promise<T> {
  const path = await tempDir();
  const app = await startJobs({ path, threads: 1, logLevel: 'warn' });
  try {
    return await body(app, path);
  } finally {
    for (const child of [...children]) await child.stop();
    await app.close();
  }
}

// --- 1. add -> handler start -------------------------------------------------

interface Latency {
  p50: number;
  p99: number;
  /** add -> its answer, and its answer -> handler start. */
  legs: { name: string; p50: number; p99: number }[];
}

function summarize(total: number[], added: number[], started: number[]): Latency {
  const sorted = (list: number[]): number[] => [...list].sort((a, b) => a - b);
  const [t, a, s] = [sorted(total), sorted(added), sorted(started)];
  return {
    p50: percentile(t, 50),
    p99: percentile(t, 99),
    legs: [
      { name: 'add answered (committed; durable, or written with deferred)', p50: percentile(a, 50), p99: percentile(a, 99) },
      { name: 'handler start - add answer (< 0: started first)', p50: percentile(s, 50), p99: percentile(s, 99) },
    ],
  };
}

interface LatencySide {
  label: string;
  app: JobsApp;
  /** Resolves once the worker has finished job `id` (asked before the job is added). */
  finished(id: string): Promise<void>;
  total: number[];
  added: number[];
  started: number[];
}

/** One add -> handler start sample on `side`. */
async function sampleOnce(side: LatencySide, id: string, keep: boolean): Promise<void> {
  const done = side.finished(id);
  // Let the worker settle back into its waiting accept.
  await sleep(LATENCY_GAP_MS);
  const before = epochNow();
  await side.app.add('lat', id);
  const answered = epochNow();
  await done;
  // The handler returns its start time: the job's result, kept apart from its input.
  const data = (await side.app.getJob('lat', id))?.result as { startedAt: number };
  if (!keep) return;
  side.total.push(data.startedAt - before);
  side.added.push(answered - before);
  side.started.push(data.startedAt - answered);
}

/** add -> handler start on one store's durability and handler place, with the worker in another process and in the same. */
interface LatencyPair {
  durability: StoreDurability;
  place: HandlerPlace;
  other: Latency;
  same: Latency;
}

/**
 * The two stores of one durability and handler place: one whose worker is
 * a client process, one whose worker runs in the owner's own process. The
 * client's store durability is its owner's (this process's).
 */
async function latencySides(durability: StoreDurability, place: HandlerPlace): Promise<{ other: LatencySide; same: LatencySide; close(): Promise<void> }> {
  const otherPath = await tempDir();
  const samePath = await tempDir();
  const otherApp = await startJobs({ path: otherPath, threads: 1, logLevel: 'warn', durability });
  const sameApp = await startJobs({ path: samePath, threads: 1, logLevel: 'warn', durability });
  const close = async (): Promise<void> => {
    await otherApp.close();
    await sameApp.close();
  };
  try {
    await otherApp.setTypeTimeout('lat', 30);
    const worker = forkChild(['--mode', 'worker', '--path', otherPath, '--type', 'lat', '--handler', 'started-at', '--run-in', place, '--report', 'each']);
    const ready = await worker.next('ready');
    if (ready.role !== 'client') throw new Error(`the worker process is the store's ${ready.role}, not a client`);
    const otherWaiting = new Map<string, () => void>();
    (worker.process as ChildProcess).on('message', (message: SharingChildMessage) => {
      if (message.kind === 'finished') otherWaiting.get(message.id)?.();
    });
    await sameApp.setTypeTimeout('lat', 30);
    const startedAt = (await import('./processors-fixtures/started-at.js')).default;
    // A plain function runs on the main thread, as an application's own does by default.
    await sameApp.process('lat', place === 'main' ? startedAt.run : startedAt, { threads: 1 });
    const sameWaiting = new Map<string, () => void>();
    sameApp.scheduler.of('lat')?.events.on('job:finished', ({ id }) => sameWaiting.get(id)?.());
    const side = (label: string, app: JobsApp, waiting: Map<string, () => void>): LatencySide => ({
      label,
      app,
      finished: (id) => new Promise((resolve) => waiting.set(id, resolve)),
      total: [],
      added: [],
      started: [],
    });
    return { other: side('worker in another process', otherApp, otherWaiting), same: side('worker in the same process', sameApp, sameWaiting), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * add -> handler start on eight stores at once, sample by sample in turn (so
 * that a burst of load on the machine touches all): for each handler place
 * (`HANDLER_PLACES`) and durability (`DURABILITIES`), one whose worker is a
 * client process and one whose worker runs in the owner's own process.
 */
async function latencies(): Promise<LatencyPair[]> {
  const opened: Array<{ durability: StoreDurability; place: HandlerPlace; other: LatencySide; same: LatencySide; close(): Promise<void> }> = [];
  try {
    for (const place of HANDLER_PLACES) {
      for (const durability of DURABILITIES) opened.push({ durability, place, ...(await latencySides(durability, place)) });
    }
    // The first 20 of each warm up (the lanes load the handler module on first use).
    for (let i = -20; i < LATENCY_SAMPLES; i++) {
      for (const { other, same } of opened) {
        await sampleOnce(other, `l${i}`, i >= 0);
        await sampleOnce(same, `l${i}`, i >= 0);
      }
      if (i >= 0 && (i + 1) % 200 === 0) progress(`${i + 1}/${LATENCY_SAMPLES} samples of each`);
    }
    return opened.map(({ durability, place, other, same }) => ({
      durability,
      place,
      other: summarize(other.total, other.added, other.started),
      same: summarize(same.total, same.added, same.started),
    }));
  } finally {
    for (const child of [...children]) await child.stop();
    for (const { close } of opened) await close();
  }
}

// --- 2. a drain in a client vs in the owner ------------------------------------

async function preload(app: JobsApp, type: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1_000) {
    await app.addMany(type, Array.from({ length: Math.min(1_000, count - i) }, (_, k) => ({ id: `d${i + k}` })));
    if ((i + 1_000) % 25_000 === 0) progress(`added ${i + 1_000}/${count}`);
  }
}

/**
 * Epoch ms at which no job of `type` is pending or running any more. Polled
 * every 20 ms with a count that stops at one job, so that the polling costs
 * the owner (which serves the drain) next to nothing; a full count every 5 s
 * for the progress line.
 */
async function drainedAt(jobs: Pick<Jobs, 'pendingCount' | 'getActiveJobIds'>, type: string, total: number, label: string): Promise<number> {
  let lastProgress = performance.now();
  for (;;) {
    if ((await jobs.pendingCount(type, { limit: 1 })) === 0 && (await jobs.getActiveJobIds(type)).length === 0) return epochNow();
    if (performance.now() - lastProgress > 5_000) {
      lastProgress = performance.now();
      progress(`${label}: ${total - (await jobs.pendingCount(type))}/${total} taken`);
    }
    await sleep(20);
  }
}

/** The drain's rate is measured once the worker has finished this many jobs: its threads are up and warm by then. */
const WARM_JOBS = 1_000;

/** Jobs per second from `from` (epoch ms, when `remaining` jobs were left) to the end of the drain. */
async function drainRate(app: JobsApp, label: string): Promise<number> {
  const from = epochNow();
  const remaining = (await app.pendingCount('drain')) + (await app.getActiveJobIds('drain')).length;
  const to = await drainedAt(app, 'drain', DRAIN_JOBS, label);
  return remaining / ((to - from) / 1000);
}

async function drainInOwner(): Promise<number> {
  return withApp(async (app) => {
    await app.setTypeTimeout('drain', 60);
    await preload(app, 'drain', DRAIN_JOBS);
    await app.process('drain', (await import('./processors-fixtures/noop.js')).default, { threads: LANE_THREADS });
    await new Promise<void>((resolve) => {
      let finished = 0;
      app.scheduler.of('drain')?.events.on('job:finished', () => {
        if (++finished === WARM_JOBS) resolve();
      });
    });
    return drainRate(app, 'drain in the owner process');
  });
}

async function drainInClient(): Promise<number> {
  return withApp(async (app, path) => {
    await app.setTypeTimeout('drain', 60);
    await preload(app, 'drain', DRAIN_JOBS);
    const worker = forkChild(['--mode', 'worker', '--path', path, '--type', 'drain', '--handler', 'noop', '--threads', String(LANE_THREADS), '--warm-after', String(WARM_JOBS)]);
    const ready = await worker.next('ready');
    if (ready.role !== 'client') throw new Error(`the worker process is the store's ${ready.role}, not a client`);
    await worker.next('warm');
    return drainRate(app, 'drain in a client process');
  });
}

// --- 3. four adders, two workers -------------------------------------------------

interface FleetResult {
  rate: number;
  finishedInStore: number;
  finishesReported: number;
  owner: string;
}

async function fleet(): Promise<FleetResult> {
  const path = await tempDir();
  const perAdder = FLEET_JOBS / ADDERS;
  let observer: Jobs | undefined;
  try {
    // The workers start first: one of them owns the store.
    const workers = Array.from({ length: WORKERS }, () =>
      forkChild(['--mode', 'worker', '--path', path, '--type', 'fleet', '--handler', 'noop', '--report', 'count', '--threads', '1']),
    );
    const roles: Extract<SharingChildMessage, { kind: 'ready' }>[] = [];
    for (const worker of workers) roles.push(await worker.next('ready'));
    const adders = Array.from({ length: ADDERS }, (_, a) =>
      forkClusterChild(['--mode', 'adder', '--path', path, '--type', 'fleet', '--prefix', `a${a}-`, '--count', String(perAdder)]),
    );
    for (const adder of adders) roles.push(await adder.next('ready'));
    const owners = roles.filter((ready) => ready.role === 'owner');
    if (owners.length !== 1) throw new Error(`${owners.length} processes say they own the store`);
    observer = await openJobs({ path, role: 'client' });
    const from = epochNow();
    for (const adder of adders) adder.send('go');
    await Promise.all(adders.map((adder) => adder.next('added', 600_000)));
    progress(`all ${FLEET_JOBS} added in ${((epochNow() - from) / 1000).toFixed(1)} s`);
    const to = await drainedAt(observer, 'fleet', FLEET_JOBS, 'four adders, two workers');
    const jobs = await observer.getJobs('fleet');
    const finishedInStore = jobs.filter((job) => job.state === 'finished').length;
    let finishesReported = 0;
    for (const worker of workers) {
      worker.send('count');
      finishesReported += (await worker.next('count')).jobs;
    }
    return {
      rate: FLEET_JOBS / ((to - from) / 1000),
      finishedInStore,
      finishesReported,
      owner: workers.some((worker) => roles[workers.indexOf(worker)]?.role === 'owner') ? 'a worker' : 'an adder',
    };
  } finally {
    await observer?.close();
    for (const child of [...children]) await child.stop();
  }
}

// --- the report ---------------------------------------------------------------------

function latencyRows(label: string, latency: Latency): Cell[][] {
  return [
    [`${label}: p50`, latency.p50, '<= 1', latency.p50 <= 1 ? 'pass' : 'FAIL'],
    [`${label}: p99`, latency.p99, '<= 5', latency.p99 <= 5 ? 'pass' : 'FAIL'],
  ];
}

async function main(): Promise<void> {
  console.log(`sharing bench${quick ? ' (quick)' : ''}${only === undefined ? '' : ` (${only} only)`}: processes on one embedded store`);
  let latency: LatencyPair[] | undefined;
  let machine: IdleWake | undefined;
  if (only === undefined || only === 'latency') {
    console.log(
      `1. add -> handler start, idle worker, ${LATENCY_SAMPLES} samples on each side, in turn, main-thread and thread handlers, with durability flush and deferred`,
    );
    latency = await latencies();
    progress(`the machine's own wake-up after ${LATENCY_GAP_MS} ms idle, ${LATENCY_SAMPLES} samples`);
    machine = await measureIdleWake(LATENCY_SAMPLES, LATENCY_GAP_MS);
  }
  const inOwnerRounds: number[] = [];
  const inClientRounds: number[] = [];
  if (only === undefined || only === 'drain') {
    console.log(`2. a drain of ${DRAIN_JOBS} no-op jobs with app.process, ${DRAIN_ROUNDS} rounds in the owner process and in a client process, in turn`);
    for (let round = 0; round < DRAIN_ROUNDS; round++) {
      inOwnerRounds.push(await drainInOwner());
      progress(`round ${round + 1}: in the owner process ${Math.round(inOwnerRounds.at(-1) as number)} jobs/s`);
      inClientRounds.push(await drainInClient());
      progress(`round ${round + 1}: in a client process ${Math.round(inClientRounds.at(-1) as number)} jobs/s`);
    }
  }
  let fleetResult: FleetResult | undefined;
  if (only === undefined || only === 'fleet') {
    console.log(`3. ${ADDERS} adder processes (cluster), ${WORKERS} worker processes, ${FLEET_JOBS} jobs`);
    fleetResult = await fleet();
  }

  if (latency !== undefined) {
    console.log();
    console.log(
      formatTable(
        ['add -> handler start, idle worker, ms', 'measured', 'target', 'result'],
        latency.flatMap(({ durability, place, other, same }) => [
          ...latencyRows(`${PLACE_LABELS[place]}, ${durability}: worker in another process`, other),
          ...latencyRows(`${PLACE_LABELS[place]}, ${durability}: worker in the same process`, same),
        ]),
      ),
    );
    for (const { durability, place, other, same } of latency) {
      console.log();
      console.log(
        formatTable(
          [`the legs of add -> handler start (${PLACE_LABELS[place]}, ${durability}), ms`, 'other p50', 'other p99', 'same p50', 'same p99'],
          other.legs.map((leg, i) => [leg.name, leg.p50, leg.p99, same.legs[i]?.p50 ?? '-', same.legs[i]?.p99 ?? '-']),
        ),
      );
    }
  }
  if (machine !== undefined) {
    // A slow wake-up stretches whatever runs first after a pause: it sets the p99 above, whatever runs.
    console.log();
    console.log(formatTable(["the machine's own wake-up, no job system involved, ms", 'p50', 'p99'], idleWakeRows(machine, LATENCY_GAP_MS)));
  }
  const rows: Cell[][] = [];
  if (latency !== undefined) {
    for (const { durability, place, other, same } of latency) {
      rows.push(infoRow(`add -> handler start p50 (${PLACE_LABELS[place]}, ${durability}), other process vs same (ms)`, other.p50, same.p50));
      rows.push(infoRow(`add -> handler start p99 (${PLACE_LABELS[place]}, ${durability}), other process vs same (ms)`, other.p99, same.p99));
    }
  }
  if (inOwnerRounds.length > 0) {
    const drainRatio = median(inClientRounds.map((rate, round) => rate / (inOwnerRounds[round] as number)));
    rows.push([
      `drain of ${DRAIN_JOBS} no-op jobs (jobs/s, medians): client process vs owner process; median of per-round ratios`,
      median(inClientRounds),
      median(inOwnerRounds),
      Number(drainRatio.toPrecision(3)),
      '>= 0.8',
      drainRatio >= 0.8 ? 'pass' : 'FAIL',
    ]);
  }
  if (fleetResult !== undefined) {
    rows.push(infoRow(`${ADDERS} adders + ${WORKERS} workers, ${FLEET_JOBS} jobs (jobs/s)${inOwnerRounds.length > 0 ? ' vs the drain in the owner' : ''}`, fleetResult.rate, inOwnerRounds.length > 0 ? median(inOwnerRounds) : undefined));
  }
  console.log();
  console.log(formatTable(RATIO_HEADER, rows));
  if (fleetResult !== undefined) {
    console.log();
    const { finishedInStore, finishesReported } = fleetResult;
    console.log(
      formatTable(
        [`${ADDERS} adders + ${WORKERS} workers (the owner: ${fleetResult.owner})`, 'count', 'expected', 'result'],
        [
          ['jobs finished in the store', finishedInStore, FLEET_JOBS, finishedInStore === FLEET_JOBS ? 'pass' : 'FAIL'],
          ["finishes the workers' schedulers reported", finishesReported, FLEET_JOBS, finishesReported === FLEET_JOBS ? 'pass' : 'FAIL'],
        ],
      ),
    );
    if (finishedInStore !== FLEET_JOBS || finishesReported !== FLEET_JOBS) process.exitCode = 1;
  }
}

try {
  await main();
} finally {
  for (const child of [...children]) child.process.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}
