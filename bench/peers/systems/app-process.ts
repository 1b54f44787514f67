// `app.process` in the peer benchmark: what jobtree's users are told to
// run. A jobs app (`startJobs`) on a fresh store, and `app.process(type,
// handler, { maxJobs })` with the handler either a function on the main
// thread's event loop (as BullMQ's Worker and graphile-worker run theirs)
// or a module that runs in the app's shared handler threads (as BullMQ's
// sandboxed processors run theirs).
//
// A job counts as complete when the scheduler reports it finished (its
// finish committed). The scheduler's events are read through
// `app.scheduler.of(type)`, which names the scheduler as soon as it exists,
// before `process()` resolves: the benchmark follows it from then on, so
// no finish is missed however soon the first job ends (a drain follows it
// from its first handler run, see AppProcessSystem's #follower).
//
// Without `--retention` the app runs with its defaults, retention on; with
// it, once with and once without (retention-setting.ts).

import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchSystem, DrainResult, FirstJobResult, LatencyResult } from '../bench-system.js';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencyOf, latencySampleId, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import { listenToHandlerRuns, listenToHandlerStarts } from './handler-runs.js';
import { DURABILITY, TYPE, TYPE_TIMEOUT_SECONDS } from './jobtree.js';
import { type RetentionSetting, retentionOption } from './retention-setting.js';

/** Where a handler runs: on the main thread (a function) or in the app's handler threads (a module). */
export type AppProcessMode = 'main thread' | 'threads';

const FILL_BATCH = 1_000;

/** The slices of jobtree's app that this benchmark uses. */
interface SchedulerEvents {
  on(event: 'job:finished', listener: (event: { id: string; state: string }) => void): unknown;
}
interface AppSlice {
  jobs: {
    addMany(type: string, specs: readonly { id: string; data?: unknown }[]): Promise<readonly unknown[]>;
    foldJobs<A>(type: string, fold: (acc: A, job: { state: string }) => A, initial: A): Promise<A>;
  };
  add(type: string, id: string, data: unknown): Promise<unknown>;
  setTypeTimeout(type: string, seconds: number): Promise<unknown>;
  process(type: string, handler: unknown, options: { maxJobs: number }): Promise<void>;
  scheduler: { of(type: string): { events: SchedulerEvents } | undefined };
  close(): Promise<void>;
}
type StartJobs = (options: { path: string; logLevel: 'silent'; retention?: false }) => Promise<AppSlice>;

async function loadStartJobs(): Promise<StartJobs> {
  const jobtree: Record<string, unknown> = await import('jobtree');
  if (typeof jobtree.startJobs !== 'function') throw new PeerBenchError('server_failed', 'this build of jobtree does not export startJobs');
  return jobtree.startJobs as StartJobs;
}

/** Who follows a scheduler's finishes (see AppProcessSystem's #follower). */
interface Follower {
  readonly polls: boolean;
  following: boolean;
  follow(): void;
}

const handlerUrl = (name: string) => new URL(`../handlers/${name}`, import.meta.url).href;

export class AppProcessSystem implements BenchSystem {
  readonly label: string;
  readonly key: string;
  readonly durability = DURABILITY;
  readonly #scratch: string;
  readonly #mode: AppProcessMode;
  readonly #startJobs: StartJobs;
  readonly #retention: RetentionSetting | undefined;

  /** `retention`: on or off under `--retention`; undefined runs the app with its defaults (on). */
  static async open(scratch: string, mode: AppProcessMode, retention?: RetentionSetting): Promise<AppProcessSystem> {
    return new AppProcessSystem(scratch, mode, await loadStartJobs(), retention);
  }

  private constructor(scratch: string, mode: AppProcessMode, startJobs: StartJobs, retention: RetentionSetting | undefined) {
    this.#scratch = scratch;
    this.#mode = mode;
    this.#startJobs = startJobs;
    this.#retention = retention;
    this.label = mode === 'threads' ? 'app.process threads' : 'app.process';
    this.key = mode === 'threads' ? 'app.process-threads' : 'app.process';
  }

  /** A jobs app on a fresh store in the scratch folder, its type's timeout set; closed and deleted after `body`. */
  async #withApp<T>(body: (app: AppSlice) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(this.#scratch, 'app-'));
    const app = await this.#startJobs({ path: dir, logLevel: 'silent', ...retentionOption(this.#retention) });
    try {
      await app.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
      return await body(app);
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * Calls `app.process` and follows its scheduler's finishes from the moment
   * it exists (see the file's comment). Resolves once `process()` has.
   * With a polling follower, checked on every turn of the event loop until
   * then; a drain's follower does not poll (see #follower).
   */
  async #process(app: AppSlice, handler: unknown, maxJobs: number, finished: (id: string) => void, follower = this.#follower(app, finished)): Promise<void> {
    // The scheduler is made (and named) in one synchronous step, and no job
    // can finish before a take and a finish have committed, turns later.
    let polling = follower.polls;
    const poll = (): void => {
      follower.follow();
      if (polling && !follower.following) setImmediate(poll);
    };
    if (polling) setImmediate(poll);
    try {
      await app.process(TYPE, handler, { maxJobs });
    } finally {
      polling = false;
    }
    follower.follow();
    if (!follower.following) throw new PeerBenchError('server_failed', `${this.label}: no scheduler for ${TYPE} after process() resolved`);
  }

  /**
   * Listens to the scheduler's finishes once `follow()` finds it. A drain's
   * follower does not poll: that spin would keep the main thread busy the
   * whole time the handler threads start, and the drain's CPU would count
   * it as jobtree's. The drain calls `follow()` as each handler run is
   * reported instead (the scheduler exists once a handler runs, and the
   * run's finish commits turns after its report); a finish missed all the
   * same would leave the drain short of its count, failing it, not
   * counting it wrong.
   */
  #follower(app: AppSlice, finished: (id: string) => void, polls = true): Follower {
    const follower: Follower = {
      polls,
      following: false,
      follow: () => {
        if (follower.following) return;
        const scheduler = app.scheduler.of(TYPE);
        if (scheduler === undefined) return;
        follower.following = true;
        scheduler.events.on('job:finished', (event) => {
          if (event.state === 'finished') finished(event.id);
        });
      },
    };
    return follower;
  }

  async drain(count: number, workers: number): Promise<DrainResult> {
    return this.#withApp(async (app) => {
      const prefix = this.#mode === 'threads' ? 'p' : 'm';
      const ledger = new CompletionLedger(prefix, count);
      const follower = this.#follower(app, (id) => ledger.markComplete(id), false);
      const runs = this.#mode === 'threads' ? listenToHandlerRuns(ledger, follower.follow) : undefined;
      try {
        const cpu = new CpuMeter([]);
        cpu.start();
        for (let start = 0; start < count; start += FILL_BATCH) {
          const specs = [];
          for (let i = start; i < Math.min(count, start + FILL_BATCH); i++) specs.push({ id: ledger.id(i), data: { i } });
          await app.jobs.addMany(TYPE, specs);
        }
        const handler =
          this.#mode === 'threads'
            ? handlerUrl('jobtree-noop.mjs')
            : (job: { id: string }) => {
                follower.follow();
                ledger.markRun(job.id);
              };
        await this.#process(app, handler, workers, (id) => ledger.markComplete(id), follower);
        const what = `${this.label}, drain ${count.toLocaleString('en-US')} @ ${workers}`;
        await watchRun(what, Promise.all([runs?.allRun(), ledger.allComplete()]), deadlineMs(count), ledger);
        const seconds = (performance.now() - ledger.firstRunAt) / 1000;
        const cpuSeconds = cpu.elapsed();
        ledger.verify(this.label);
        const [finished, unfinished] = await app.jobs.foldJobs(
          TYPE,
          ([done, left], job) => (job.state === 'finished' ? [done + 1, left] : [done, left + 1]),
          [0, 0] as [number, number],
        );
        // With retention off every job stays; with it on, the pruner may have removed some (by default
        // not before its next round, a minute after the app started: longer than a drain takes).
        const kept = this.#retention === 'off' ? finished === count : finished <= count;
        if (unfinished !== 0 || !kept) {
          throw new PeerBenchError('not_exactly_once', `${what}: ${finished} of ${count} jobs finished in the store, ${unfinished} not finished`);
        }
        return { jobs: count, seconds, perSecond: count / seconds, cpuSeconds };
      } finally {
        runs?.close();
      }
    });
  }

  /** One job waits; from `process()` resolving (the processor ready) until the job's finish committed. */
  async firstJob(): Promise<FirstJobResult> {
    return this.#withApp(async (app) => {
      await app.add(TYPE, 'first', {});
      let finishedAt: number | undefined;
      let wake: (() => void) | undefined;
      const handler = this.#mode === 'threads' ? handlerUrl('jobtree-start.mjs') : () => undefined;
      await this.#process(app, handler, 1, () => {
        finishedAt = performance.now();
        wake?.();
      });
      const ready = performance.now();
      const done = finishedAt === undefined ? new Promise<void>((resolve) => (wake = resolve)) : Promise.resolve();
      await watchRun(`${this.label}, first job`, done, 60_000);
      // A job done before process() resolved counts as done at once.
      return { firstJobMs: Math.max(0, (finishedAt ?? ready) - ready) };
    });
  }

  /** add -> handler start with one idle handler slot; a handler in a thread reports its start time on a channel. */
  async latency(samples: number, gapMs: number): Promise<LatencyResult> {
    return this.#withApp(async (app) => {
      // Epoch milliseconds with sub-millisecond precision, comparable across threads.
      const now = () => performance.timeOrigin + performance.now();
      const addedAt = new Map<string, number>();
      const latencies: number[] = [];
      const started = (id: string, at: number) => {
        if (isMeasuredSample(id)) latencies.push(at - (addedAt.get(id) ?? Number.NaN));
      };
      const starts = this.#mode === 'threads' ? listenToHandlerStarts(started) : undefined;
      try {
        const handler = this.#mode === 'threads' ? handlerUrl('jobtree-start.mjs') : (job: { id: string }) => void started(job.id, now());
        await this.#process(app, handler, 1, () => undefined);
        await sleep(50); // the processor is idle, waiting for a job, before the first add
        const work = (async () => {
          for (let i = 0; i < LATENCY_WARM_UP_SAMPLES + samples; i++) {
            const id = latencySampleId(i);
            addedAt.set(id, now());
            await app.add(TYPE, id, { i });
            await sleep(gapMs);
          }
          while (latencies.length < samples) await sleep(10);
        })();
        await watchRun(`${this.label}, add -> start latency`, work, deadlineMs(samples * 10));
        return latencyOf(latencies);
      } finally {
        starts?.close();
      }
    });
  }

  async close(): Promise<void> {}
}
