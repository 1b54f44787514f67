// The in-process chaos run: a jobs app on a fault-injecting store, worker
// actors and main-thread workers, an adder and subscribers, and a seeded
// schedule of faults against all of it. Then a quiet period, a check that
// every running job has a live worker, a drain, and the checker over the
// history and the store. The store's invariants are also checked every
// couple of seconds while the faults fly.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConsistencyAnomaly, checkJobsConsistency, type JobInfo, openDatabase } from '@jobtree/core';
import { type JobsApp, type Scheduler, startJobs } from 'jobtree';
import { type Fault, type FaultKind, makeSchedule } from './fault-schedule.js';
import { fastClock } from './fast-clock.js';
import { FaultyDatabase } from './faulty-database.js';
import chaosHandler, { HISTORY_ENV } from './fixtures/chaos-handler.js';
import chaosWorker, { type ChaosWorkerMessage } from './fixtures/chaos-worker.js';
import { HistoryLog, failureCounts, readHistory } from './history.js';
import { checkHistory, describeAnomaly, type HistoryAnomaly } from './history-checker.js';
import { Prng } from './prng.js';
import { Adder, MainWorker, Subscribers, describeError } from './workload.js';

export interface ChaosRunOptions {
  seed: number;
  /** Faults to inject. */
  faults: number;
  /** Milliseconds between two faults. @default 150 */
  everyMs?: number;
  workerActors?: number;
  mainWorkers?: number;
  /**
   * Run a third job type with `app.process`: a scheduler under `user_sup`
   * and handler threads (its clock ten times fast, so a crashed handler's
   * backoff is short). @default true
   */
  processors?: boolean;
  /** Fault kinds never drawn. @default none */
  exclude?: readonly FaultKind[];
  /** System actors never killed. @default none */
  spare?: readonly string[];
  /** Milliseconds between two adds. @default 25 */
  addEveryMs?: number;
  /** Called with a line of progress now and then. */
  progress?: (line: string) => void;
}

export interface ChaosRunResult {
  seed: number;
  /** Faults injected, by kind (`kill_system` split by target as `kill <name>`). */
  faults: Map<string, number>;
  /** Storage attempts that failed with an injected error, by kind. */
  storageErrors: { conflict: number; too_old: number; unknown_result: number };
  jobs: number;
  /** What the scheduler reported of its handlers' runs: finished, crashed, stopped (thread lost, rotation), given up. */
  handlerRuns: Record<'finished' | 'crashed' | 'stopped' | 'failed', number>;
  historyLines: number;
  /** Calls answered with an error other than halt, by operation and code. */
  failures: Map<string, number>;
  storeChecks: number;
  anomalies: HistoryAnomaly[];
  /** Each anomaly with its job's history lines. */
  descriptions: string[];
  elapsedMs: number;
}

/** The drain fails after this long without a job fewer left... */
const DRAIN_STALL_MS = 90_000;
/** ...or after this long in all. */
const DRAIN_CAP_MS = 600_000;
/** Types worked by worker actors and main-thread workers. */
const TYPES = ['chaos_a', 'chaos_b'] as const;
/** The type the scheduler runs with handlers. */
const HANDLED = 'chaos_h';
const TIMEOUTS: Record<string, number> = { chaos_a: 2, chaos_b: 3, chaos_h: 3 };
/** How much faster the scheduler's clock runs than the wall clock. */
const SCHEDULER_SPEED = 10;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosRunOptions): Promise<ChaosRunResult> {
  const started = Date.now();
  const { seed } = options;
  const everyMs = options.everyMs ?? 150;
  const workerActors = options.workerActors ?? 4;
  const mainWorkers = options.mainWorkers ?? 2;
  const processors = options.processors ?? true;
  const allTypes: string[] = processors ? [...TYPES, HANDLED] : [...TYPES];
  const progress = options.progress ?? (() => {});
  const prng = new Prng(seed);
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-chaos-'));
  const historyPath = join(dir, 'history.jsonl');
  const log = new HistoryLog(historyPath);
  const database = new FaultyDatabase(await openDatabase({ path: join(dir, 'store') }));
  const anomalies: HistoryAnomaly[] = [];
  const faultCounts = new Map<string, number>();
  let storeChecks = 0;
  const handlerRuns = { finished: 0, crashed: 0, stopped: 0, failed: 0 };
  let app: JobsApp | undefined;
  try {
    app = await startJobs({
      database,
      threads: 2,
      typeMonitorHoldoffMs: 20,
      activityMonitorMaxJitterMs: 100,
      typeCheckPeriodMs: 2_000,
      typeCheckMaxJitterMs: 500,
      resubscribeTimeoutMs: 15_000,
      userIntensity: 1_000,
      userPeriodMs: 1_000,
      killTimeoutMs: 300,
      // The checker reads every acknowledged job back from the store at the end: a long
      // run (--faults) finishes more jobs than the default retention keeps.
      retention: false,
    });
    for (const type of allTypes) await app.setTypeTimeout(type, TIMEOUTS[type]!);
    const running = app;
    // Each scheduler the processor actor starts (again after a kill) gets its listeners at the next fault or check.
    const followed = new WeakSet<Scheduler>();
    const followScheduler = (): void => {
      const scheduler = running.scheduler.of(HANDLED);
      if (scheduler === undefined || followed.has(scheduler)) return;
      followed.add(scheduler);
      scheduler.events.on('job:crashed', () => {
        handlerRuns.crashed += 1;
      });
      scheduler.events.on('job:stopped', () => {
        handlerRuns.stopped += 1;
      });
      // The scheduler's finishes are the history's answers to the finishes its handlers asked for.
      scheduler.events.on('job:finished', ({ id, state }) => {
        handlerRuns.finished += 1;
        log.record({ op: 'finish', phase: 'ok', type: HANDLED, id, by: 'scheduler', state });
      });
      scheduler.events.on('job:failed', ({ id, error }) => {
        handlerRuns.failed += 1;
        log.record({ op: 'finish', phase: 'ok', type: HANDLED, id, by: 'scheduler', state: 'failed', error });
      });
    };
    if (processors) {
      process.env[HISTORY_ENV] = historyPath;
      await app.process(HANDLED, chaosHandler, {
        maxJobs: 8,
        threads: 1,
        clock: fastClock(SCHEDULER_SPEED),
        // In the fast clock's milliseconds: a real second between heartbeats, a pass every 2 s, a second of grace.
        heartbeatMs: 1_000 * SCHEDULER_SPEED,
        interval: 2_000 * SCHEDULER_SPEED,
        graceMs: 1_000 * SCHEDULER_SPEED,
        // The stuck-thread watchdog runs on real time: a stalled handler loses its thread after 1.5 s.
        stuckThreadMs: 1_500,
      });
      followScheduler();
    }

    const workerArgs = (i: number) => ({ type: TYPES[i % TYPES.length]!, name: `worker-${i}`, historyPath, seed, maxUpdates: 3, maxStepMs: 40 });
    for (let i = 0; i < workerActors; i++) await app.system.startActor(`worker-${i}`, chaosWorker, workerArgs(i), { name: `worker-${i}` });
    const mains: MainWorker[] = [];
    const incarnations: number[] = [];
    const mainWorker = (i: number) => {
      incarnations[i] = (incarnations[i] ?? 0) + 1;
      return new MainWorker(running, log, prng.fork(`main-${i}-${incarnations[i]}`), { types: TYPES, name: `main-${i}#${incarnations[i]}`, maxUpdates: 3, maxStepMs: 40 });
    };
    for (let i = 0; i < mainWorkers; i++) mains.push(mainWorker(i));

    const subscribers = new Subscribers(app, log);
    const follow = prng.fork('follow');
    const adder = new Adder(app, log, prng.fork('adder'), {
      types: allTypes,
      prefix: 'job-',
      everyMs: options.addEveryMs ?? 25,
      max: Number.POSITIVE_INFINITY,
      removeChance: 0.02,
      onAdded: (type, id) => {
        if (follow.chance(0.2)) subscribers.follow(type, id);
      },
    });
    adder.start();

    const checkStore = async (when: string): Promise<void> => {
      const report = await checkJobsConsistency(database.inner);
      storeChecks += 1;
      for (const anomaly of report.anomalies) anomalies.push(fromStore(anomaly, when));
      if (running.system.whereis('jobs_sup') === undefined) anomalies.push({ kind: 'tree_down', type: undefined, id: undefined, detail: `the root supervisor is gone (${when})` });
    };

    // --- faults ---------------------------------------------------------------
    const schedule = makeSchedule({ seed, faults: options.faults, everyMs, workerActors, mainWorkers, processors, types: allTypes, rootGapMs: 4_000, exclude: options.exclude ?? [], spare: options.spare ?? [] });
    const phaseStart = Date.now();
    let lastCheck = Date.now();
    for (const [index, fault] of schedule.entries()) {
      const wait = phaseStart + fault.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      log.record({ op: 'fault', by: 'harness', detail: `${fault.kind} ${fault.target}` });
      await inject(running, database, fault, mains, mainWorker, log, HANDLED);
      followScheduler();
      const label = fault.kind === 'kill_system' ? `kill ${fault.target}` : fault.kind;
      faultCounts.set(label, (faultCounts.get(label) ?? 0) + 1);
      if (Date.now() - lastCheck > 2_000) {
        await checkStore(`after fault ${index + 1}`);
        lastCheck = Date.now();
      }
      if ((index + 1) % 100 === 0) progress(`  ${index + 1}/${schedule.length} faults, ${adder.count} jobs added`);
    }
    await adder.stop();
    database.disarm();

    // --- quiet: nothing killed for longer than a re-enqueue takes --------------
    progress('  quiet period');
    await sleep(2 * Math.max(...Object.values(TIMEOUTS)) * 1_000 + 1_500);
    await checkStore('quiet');
    anomalies.push(...checkSupervisedWorkers(running, workerActors, processors));
    anomalies.push(...(await checkLiveWorkers(running, database, historyPath, mains, workerActors)));
    followScheduler();
    if (processors) anomalies.push(...(await checkSchedulerHolds(running, database)));

    // --- drain ---------------------------------------------------------------------
    progress('  drain');
    const drained = await drain(running, allTypes, DRAIN_STALL_MS, followScheduler, () => handlerRuns.crashed + handlerRuns.failed);
    if (!drained) {
      progress('  the drain timed out; left:');
      for (const type of allTypes) {
        for (const job of await running.getJobs(type)) if (job.state !== 'finished') progress(`    ${type}/${job.id} ${job.state} ${JSON.stringify(job.data)}`);
      }
      if (processors) progress(`    the scheduler: ${JSON.stringify(running.scheduler.jobs().jobs)}`);
    }
    await subscribers.settle(20_000);
    subscribers.freeze();
    await checkStore('drained');
    const jobs: JobInfo[] = [];
    for (const type of allTypes) jobs.push(...(await running.getJobs(type)));
    for (const worker of mains) worker.crash();
    await running.close();
    app = undefined;
    log.close();
    const history = readHistory(historyPath);
    anomalies.push(...checkHistory({ history, jobs, drained: true }));
    return {
      seed,
      faults: faultCounts,
      storageErrors: { ...database.raised },
      jobs: adder.count,
      handlerRuns,
      historyLines: history.length,
      failures: failureCounts(history),
      storeChecks,
      anomalies,
      descriptions: anomalies.map((anomaly) => describeAnomaly(anomaly, history)),
      elapsedMs: Date.now() - started,
    };
  } finally {
    await app?.close().catch(() => {});
    log.close();
    await database.close().catch(() => {});
    if (anomalies.length === 0) await rm(dir, { recursive: true, force: true });
    else progress(`  kept the run's store and history in ${dir}`);
  }
}

function fromStore(anomaly: ConsistencyAnomaly, when: string): HistoryAnomaly {
  return { kind: anomaly.kind, type: anomaly.type, id: anomaly.id, detail: `${anomaly.detail} (store check ${when})` };
}

async function inject(
  app: JobsApp,
  database: FaultyDatabase,
  fault: Fault,
  mains: MainWorker[],
  mainWorker: (i: number) => MainWorker,
  log: HistoryLog,
  handled: string,
): Promise<void> {
  const kind: FaultKind = fault.kind;
  try {
    switch (kind) {
      case 'kill_worker_actor':
        if (app.system.whereis(`worker-${fault.target}`) !== undefined) await app.system.kill(`worker-${fault.target}`);
        return;
      case 'crash_main_worker': {
        const i = Number(fault.target);
        mains[i]?.crash();
        mains[i] = mainWorker(i);
        return;
      }
      case 'kill_system':
        if (app.system.whereis(fault.target) !== undefined) await app.system.kill(fault.target);
        return;
      case 'stall_thread': {
        const name = `worker-${fault.target}`;
        if (app.system.whereis(name) === undefined) return;
        app.system.cast<ChaosWorkerMessage>(name, { type: 'stall' });
        await sleep(50);
        if (app.system.whereis(name) !== undefined) await app.system.kill(name);
        return;
      }
      case 'storage_conflict':
        database.arm('conflict', Number(fault.target));
        return;
      case 'storage_too_old':
        database.arm('too_old', Number(fault.target));
        return;
      case 'storage_unknown_result':
        database.arm('unknown_result', Number(fault.target));
        return;
      case 'kill_processor':
        if (app.system.whereis(`processor:${handled}`) !== undefined) await app.system.kill(`processor:${handled}`);
        return;
      case 'stall_handler':
      case 'crash_handler':
        // A job whose handler misbehaves on its first run; recorded like the adder's jobs.
        log.record({ op: 'add', phase: 'invoke', type: handled, id: fault.target, by: 'harness' });
        await app.add(handled, fault.target, kind === 'stall_handler' ? { stall: true } : { crash: true });
        log.record({ op: 'add', phase: 'ok', type: handled, id: fault.target, by: 'harness' });
        return;
    }
  } catch (error) {
    log.record({ op: 'fault', phase: 'fail', by: 'harness', detail: `${fault.kind} ${fault.target}`, error: describeError(error) });
  }
}

/**
 * Every worker actor and the processor are permanent children of user_sup:
 * after the quiet period each must be running again, whatever was killed.
 */
function checkSupervisedWorkers(app: JobsApp, workerActors: number, processors: boolean): HistoryAnomaly[] {
  const names = Array.from({ length: workerActors }, (_, i) => `worker-${i}`);
  if (processors) names.push(`processor:${HANDLED}`);
  return names
    .filter((name) => app.system.whereis(name) === undefined)
    .map((name) => ({ kind: 'worker_gone', type: undefined, id: undefined, detail: `${name}, a permanent child of user_sup, is not running after the quiet period` }));
}

/**
 * With nothing killed for longer than a re-enqueue takes, every running job
 * must belong to a live worker: the lock in its data row is one a live
 * worker accepted and has not let go. Two snapshots half a second apart, so
 * that a job accepted a moment ago (its accept not logged yet) is not taken
 * for an orphan.
 */
async function checkLiveWorkers(app: JobsApp, database: FaultyDatabase, historyPath: string, mains: readonly MainWorker[], workerActors: number): Promise<HistoryAnomaly[]> {
  const first = await checkJobsConsistency(database.inner);
  await sleep(500);
  const second = await checkJobsConsistency(database.inner);
  const live = new Set<string>(mains.filter((worker) => worker.alive).map((worker) => worker.by));
  for (let i = 0; i < workerActors; i++) {
    const id = app.system.whereis(`worker-${i}`);
    if (id !== undefined) live.add(`worker-${i}@${id}`);
  }
  const holders = new Map<string, string>();
  const released = new Set<string>();
  for (const entry of readHistory(historyPath)) {
    if (entry.lock === undefined || entry.by === undefined) continue;
    if (entry.op === 'accept') holders.set(entry.lock, entry.by);
    if ((entry.op === 'finish' && entry.phase !== 'invoke') || entry.phase === 'halt' || entry.phase === 'fail') released.add(entry.lock);
  }
  const stillRunning = new Set(second.running.map((job) => `${job.type}/${job.id}/${job.lock}`));
  const anomalies: HistoryAnomaly[] = [];
  for (const job of first.running) {
    if (job.type === HANDLED || !stillRunning.has(`${job.type}/${job.id}/${job.lock}`)) continue;
    const holder = holders.get(job.lock);
    if (holder === undefined || !live.has(holder) || released.has(job.lock)) {
      anomalies.push({
        kind: 'no_live_worker',
        type: job.type,
        id: job.id,
        detail: `running with lock ${job.lock} ${holder === undefined ? 'that no worker logged accepting' : `held by ${holder}, which is ${live.has(holder) ? 'alive but let it go' : 'dead'}`}`,
      });
    }
  }
  return anomalies;
}

/**
 * After the quiet period, every job of the scheduler's type that is running
 * must be one the scheduler holds (its summaries list it as running or
 * about to run): a job the store says is running that no processor holds
 * would wait for a re-enqueue it should not need.
 */
async function checkSchedulerHolds(app: JobsApp, database: FaultyDatabase): Promise<HistoryAnomaly[]> {
  const first = await checkJobsConsistency(database.inner);
  await sleep(500);
  const second = await checkJobsConsistency(database.inner);
  const held = new Set(app.scheduler.jobs().jobs.filter((job) => job.type === HANDLED).map((job) => job.id));
  const stillRunning = new Set(second.running.filter((job) => job.type === HANDLED).map((job) => `${job.id}/${job.lock}`));
  return first.running
    .filter((job) => job.type === HANDLED && stillRunning.has(`${job.id}/${job.lock}`) && !held.has(job.id))
    .map((job) => ({ kind: 'no_live_worker', type: job.type, id: job.id, detail: `running with lock ${job.lock}, not held by the scheduler` }));
}

/**
 * Waits until no job of `types` is pending or running. A drain that keeps
 * making progress is given time: it fails only after `stallMs` without
 * progress, or after DRAIN_CAP_MS in all. Progress is fewer jobs left than
 * ever before, or a crash the scheduler charged (`charged()` grew): with one
 * handler thread, a backlog of jobs that hang on their first attempt takes
 * the thread down once per stuck period, charging one culprit each time and
 * finishing nothing until every hanging job has been charged; that is slow,
 * not stuck. A job that stays stuck still fails the check.
 */
async function drain(
  app: JobsApp,
  types: readonly string[],
  stallMs: number,
  eachRound: () => void,
  charged: () => number,
): Promise<boolean> {
  const started = Date.now();
  let lastProgress = started;
  let least = Number.POSITIVE_INFINITY;
  let chargedSoFar = charged();
  while (Date.now() - lastProgress < stallMs && Date.now() - started < DRAIN_CAP_MS) {
    eachRound();
    let busy = 0;
    for (const type of types) busy += (await app.pendingCount(type)) + (await app.getActiveJobIds(type)).length;
    if (busy === 0) return true;
    if (busy < least || charged() > chargedSoFar) {
      least = Math.min(least, busy);
      chargedSoFar = charged();
      lastProgress = Date.now();
    }
    await sleep(200);
  }
  return false;
}
