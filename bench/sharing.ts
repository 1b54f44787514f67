// Benchmark of several processes on one embedded store, run by
// `pnpm bench:sharing [--quick]`. Every figure is a ratio of two
// measurements of the same run, or a count checked in it:
//
// 1. add -> handler start, p50 and p99, one job at a time with an idle
//    worker (targets 1 ms and 5 ms): the worker (app.process) in another
//    process, a client of the adding owner, against the worker in the
//    owner's own process. And leg by leg for the other process: the add's
//    durable commit, then the rest (the waiting accept's commit, its answer
//    over the socket, the lane starting the handler).
// 2. A drain of 100,000 pending no-op jobs (20,000 with --quick) with
//    app.process in a client process, against the same drain in the owner
//    process (target >= 0.8): jobs per second from the app.process call to
//    the last job finished.
// 3. Four adder processes (Node cluster) and two worker processes on one
//    store: 100,000 jobs (20,000 with --quick) added with `add` and run by
//    app.process; jobs per second from the first add to the last finish,
//    and every job finished exactly once (the store says finished, the
//    workers' schedulers report as many finishes as there are jobs).
//
// Every process it starts is stopped before it ends, and its data
// directories removed.

import { type ChildProcess, fork } from 'node:child_process';
import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Jobs, openJobs } from '@jobtree/core';
import { type JobsApp, startJobs } from 'jobtree';
import type { SharingChildMessage } from './sharing-fixtures/sharing-child.js';
import { type Cell, formatTable, infoRow, RATIO_HEADER, ratioRow } from './table.js';

const quick = process.argv.includes('--quick');
const LATENCY_SAMPLES = quick ? 200 : 1_000;
const DRAIN_JOBS = quick ? 20_000 : 100_000;
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

function forkChild(args: string[]): Child {
  return new Child(fork(CHILD, args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
}

function forkClusterChild(args: string[]): Child {
  cluster.setupPrimary({ exec: CHILD, args, execArgv: ['--import', 'tsx'], silent: false });
  return new Child(cluster.fork());
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
      { name: 'add answered (committed, durable)', p50: percentile(a, 50), p99: percentile(a, 99) },
      { name: 'then the handler started', p50: percentile(s, 50), p99: percentile(s, 99) },
    ],
  };
}

/** Samples add -> handler start; `finished(id)` resolves once the worker has finished job `id`. */
async function sampleLatency(app: JobsApp, finished: (id: string) => Promise<void>, label: string): Promise<Latency> {
  const total: number[] = [];
  const added: number[] = [];
  const started: number[] = [];
  for (let i = -20; i < LATENCY_SAMPLES; i++) {
    const id = `l${i}`;
    const done = finished(id);
    // Let the worker settle back into its waiting accept.
    await sleep(5);
    const before = epochNow();
    await app.add('lat', id);
    const answered = epochNow();
    await done;
    const data = (await app.getJobData('lat', id)) as { startedAt: number };
    if (i >= 0 && (i + 1) % 100 === 0) progress(`${label}: ${i + 1}/${LATENCY_SAMPLES}`);
    if (i < 0) continue; // warm-up
    total.push(data.startedAt - before);
    added.push(answered - before);
    started.push(data.startedAt - answered);
  }
  return summarize(total, added, started);
}

async function latencyOtherProcess(): Promise<Latency> {
  return withApp(async (app, path) => {
    await app.setTypeTimeout('lat', 30);
    const worker = forkChild(['--mode', 'worker', '--path', path, '--type', 'lat', '--handler', 'started-at', '--report', 'each']);
    const ready = await worker.next('ready');
    if (ready.role !== 'client') throw new Error(`the worker process is the store's ${ready.role}, not a client`);
    const waiting = new Map<string, () => void>();
    (worker.process as ChildProcess).on('message', (message: SharingChildMessage) => {
      if (message.kind === 'finished') waiting.get(message.id)?.();
    });
    const finished = (id: string): Promise<void> => new Promise((resolve) => waiting.set(id, resolve));
    return sampleLatency(app, finished, 'worker in another process');
  });
}

async function latencySameProcess(): Promise<Latency> {
  return withApp(async (app) => {
    await app.setTypeTimeout('lat', 30);
    await app.process('lat', (await import('./processors-fixtures/started-at.js')).default, { threads: 1 });
    const waiting = new Map<string, () => void>();
    app.scheduler.of('lat')?.events.on('job:finished', ({ id }) => waiting.get(id)?.());
    const finished = (id: string): Promise<void> => new Promise((resolve) => waiting.set(id, resolve));
    return sampleLatency(app, finished, 'worker in the same process');
  });
}

// --- 2. a drain in a client vs in the owner ------------------------------------

async function preload(app: JobsApp, type: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1_000) {
    await app.addMany(type, Array.from({ length: Math.min(1_000, count - i) }, (_, k) => ({ id: `d${i + k}` })));
    if ((i + 1_000) % 25_000 === 0) progress(`added ${i + 1_000}/${count}`);
  }
}

/** Epoch ms at which no job of `type` is pending or running any more (polled every 50 ms). */
async function drainedAt(jobs: Pick<Jobs, 'pendingCount' | 'getActiveJobIds'>, type: string, total: number, label: string): Promise<number> {
  let reported = 0;
  for (;;) {
    const pending = await jobs.pendingCount(type);
    const active = (await jobs.getActiveJobIds(type)).length;
    if (pending === 0 && active === 0) return epochNow();
    const done = total - pending - active;
    if (done - reported >= 25_000) {
      reported = done - (done % 25_000);
      progress(`${label}: ~${reported}/${total} finished`);
    }
    await sleep(50);
  }
}

async function drainInOwner(): Promise<number> {
  return withApp(async (app) => {
    await app.setTypeTimeout('drain', 60);
    await preload(app, 'drain', DRAIN_JOBS);
    const from = epochNow();
    await app.process('drain', (await import('./processors-fixtures/noop.js')).default, { threads: LANE_THREADS });
    const to = await drainedAt(app, 'drain', DRAIN_JOBS, 'drain in the owner process');
    return DRAIN_JOBS / ((to - from) / 1000);
  });
}

async function drainInClient(): Promise<number> {
  return withApp(async (app, path) => {
    await app.setTypeTimeout('drain', 60);
    await preload(app, 'drain', DRAIN_JOBS);
    const worker = forkChild(['--mode', 'worker', '--path', path, '--type', 'drain', '--handler', 'noop', '--threads', String(LANE_THREADS)]);
    const ready = await worker.next('ready');
    if (ready.role !== 'client' || ready.processFrom === undefined) throw new Error(`the worker process is the store's ${ready.role}, not a client`);
    const to = await drainedAt(app, 'drain', DRAIN_JOBS, 'drain in a client process');
    return DRAIN_JOBS / ((to - ready.processFrom) / 1000);
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
  console.log(`sharing bench${quick ? ' (quick)' : ''}: processes on one embedded store`);
  console.log('1. add -> handler start, idle worker');
  const other = await latencyOtherProcess();
  const same = await latencySameProcess();
  console.log(`2. a drain of ${DRAIN_JOBS} no-op jobs with app.process`);
  const inOwner = await drainInOwner();
  const inClient = await drainInClient();
  console.log(`3. ${ADDERS} adder processes (cluster), ${WORKERS} worker processes, ${FLEET_JOBS} jobs`);
  const fleetResult = await fleet();

  console.log();
  console.log(
    formatTable(
      ['add -> handler start, idle worker, ms', 'measured', 'target', 'result'],
      [...latencyRows('worker in another process', other), ...latencyRows('worker in the same process', same)],
    ),
  );
  console.log();
  console.log(
    formatTable(
      ['the legs of add -> handler start, ms', 'other p50', 'other p99', 'same p50', 'same p99'],
      other.legs.map((leg, i) => [leg.name, leg.p50, leg.p99, same.legs[i]?.p50 ?? '-', same.legs[i]?.p99 ?? '-']),
    ),
  );
  console.log();
  console.log(
    formatTable(RATIO_HEADER, [
      infoRow('add -> handler start p50, other process vs same (ms)', other.p50, same.p50),
      infoRow('add -> handler start p99, other process vs same (ms)', other.p99, same.p99),
      ratioRow({ metric: `drain of ${DRAIN_JOBS} no-op jobs (jobs/s): client process vs owner process`, value: inClient, baseline: inOwner, target: 0.8 }),
      infoRow(`${ADDERS} adders + ${WORKERS} workers, ${FLEET_JOBS} jobs (jobs/s) vs the drain in the owner`, fleetResult.rate, inOwner),
    ]),
  );
  console.log();
  const once = fleetResult.finishedInStore === FLEET_JOBS && fleetResult.finishesReported === FLEET_JOBS;
  console.log(
    formatTable(
      [`${ADDERS} adders + ${WORKERS} workers (the owner: ${fleetResult.owner})`, 'count', 'expected', 'result'],
      [
        ['jobs finished in the store', fleetResult.finishedInStore, FLEET_JOBS, fleetResult.finishedInStore === FLEET_JOBS ? 'pass' : 'FAIL'],
        ["finishes the workers' schedulers reported", fleetResult.finishesReported, FLEET_JOBS, fleetResult.finishesReported === FLEET_JOBS ? 'pass' : 'FAIL'],
      ],
    ),
  );
  if (!once) process.exitCode = 1;
}

try {
  await main();
} finally {
  for (const child of [...children]) child.process.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}
