// jobtree in the peer benchmark, through the packages' public API only:
// `openJobs` from @jobtree/core with in-process workers (N concurrent
// accept -> finish loops), the batch calls and the core's LocalQueue when
// the core has them, and the scheduler of jobtree's processors (handlers in
// worker threads, and a handler function on the main thread) when it
// exports one.

import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Job, Jobs, LocalQueue, openJobs } from '@jobtree/core';
import type { BenchSystem, DrainResult, LatencyResult, RateResult } from '../bench-system.js';
import { latencyOf, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import { listenToHandlerRuns } from './handler-runs.js';
import { LOCAL_QUEUE } from './local-queue.js';

const TYPE = 'bench';
const TYPE_TIMEOUT_SECONDS = 60;
/** Adds in flight while filling the queue with single calls. */
const FILL_IN_FLIGHT = 64;
/** Jobs per addMany call while filling. */
const FILL_BATCH = 1_000;

/** The batch calls of the jobs API, as far as this benchmark uses them; present once the core has them. */
interface Settled {
  status: 'fulfilled' | 'rejected';
  reason?: unknown;
}
interface BatchCalls {
  /** Resolves with each job's state; rejects when one fails. */
  addMany(type: string, specs: readonly { id: string; data?: unknown }[]): Promise<readonly unknown[]>;
  acceptMany(type: string, max: number, options?: { timeout?: number }): Promise<readonly Job[]>;
  finishMany(items: readonly { job: Job }[]): Promise<readonly Settled[]>;
}

/** Whether this build of @jobtree/core has the batch calls (`addMany`, `acceptMany`, `finishMany`). */
export function hasBatchCalls(): boolean {
  const calls = Jobs.prototype as unknown as Partial<BatchCalls>;
  return typeof calls.addMany === 'function' && typeof calls.acceptMany === 'function' && typeof calls.finishMany === 'function';
}

function batchCalls(jobs: Jobs): BatchCalls | undefined {
  return hasBatchCalls() ? (jobs as unknown as BatchCalls) : undefined;
}

/** Fills the queue with the ledger's jobs: with addMany when `batch` is given, else with single adds, 64 in flight. */
async function fillJobs(jobs: Jobs, ledger: CompletionLedger, batch: BatchCalls | undefined): Promise<void> {
  if (batch) {
    for (let start = 0; start < ledger.count; start += FILL_BATCH) {
      const specs = [];
      for (let i = start; i < Math.min(ledger.count, start + FILL_BATCH); i++) specs.push({ id: ledger.id(i), data: { i } });
      const states = await batch.addMany(TYPE, specs);
      if (states.length !== specs.length) throw new PeerBenchError('not_exactly_once', `addMany answered ${states.length} of ${specs.length} jobs`);
    }
    return;
  }
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < ledger.count; i = next++) await jobs.add(TYPE, ledger.id(i), { i });
  };
  await Promise.all(Array.from({ length: FILL_IN_FLIGHT }, loop));
}

/**
 * The batched workers: they share the core's LocalQueue, which takes up to
 * LOCAL_QUEUE jobs per acceptMany and never holds more than that not yet
 * run, and takes its next batch while the workers run and their finishes
 * commit. A worker does not wait for its finish to commit before taking its
 * next job (concurrent finishes share transactions); a job counts as
 * complete when its finish resolves. Workers stop once every job has run;
 * stopping the queue waits for the last finishes.
 */
async function drainFromLocalQueue(jobs: Jobs, ledger: CompletionLedger, workers: number): Promise<void> {
  const queue = new LocalQueue(jobs, TYPE, { size: LOCAL_QUEUE });
  let refused: unknown;
  const worker = async () => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      ledger.markRun(job.id);
      const { id } = job;
      queue.finish(job).then(
        () => ledger.markComplete(id),
        (error: unknown) => {
          refused ??= error;
        },
      );
      if (ledger.ran === ledger.count) void queue.stop();
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    await queue.stop();
  }
  if (refused !== undefined) throw new PeerBenchError('not_exactly_once', `jobtree finish refused a job: ${String(refused)}`);
}

export type JobtreeVariant = 'single calls' | 'batched';

const DURABILITY = 'fsync, group commit';

export class JobtreeSystem implements BenchSystem {
  readonly label: string;
  readonly durability = DURABILITY;
  readonly #scratch: string;
  readonly #variant: JobtreeVariant;

  constructor(scratch: string, variant: JobtreeVariant) {
    this.#scratch = scratch;
    this.#variant = variant;
    this.label = variant === 'batched' ? 'jobtree batched' : 'jobtree';
    // Adding one job is the same call in both variants: measured once.
    if (variant === 'single calls') this.sequentialAdds = this.#sequentialAdds;
  }

  sequentialAdds?: (count: number) => Promise<RateResult>;

  /** Opens a fresh store in the scratch folder, runs `body`, closes and deletes it. */
  static async withJobs<T>(scratch: string, body: (jobs: Jobs) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(scratch, 'jobtree-'));
    const jobs = await openJobs({ path: dir });
    try {
      await jobs.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
      return await body(jobs);
    } finally {
      await jobs.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  async drain(count: number, workers: number): Promise<DrainResult> {
    return JobtreeSystem.withJobs(this.#scratch, async (jobs) => {
      const ledger = new CompletionLedger('j', count);
      const cpu = new CpuMeter([]);
      cpu.start();
      const batch = this.#variant === 'batched' ? batchCalls(jobs) : undefined;
      await fillJobs(jobs, ledger, batch);
      const what = `${this.label}, drain ${count.toLocaleString('en-US')} @ ${workers}`;
      // A worker whose accept finds nothing stops: the queue was filled
      // before the drain, so an empty queue means every job is taken.
      const single = async () => {
        for (let job = await jobs.accept(TYPE); job !== undefined; job = await jobs.accept(TYPE)) {
          ledger.markRun(job.id);
          await jobs.finish(job);
          ledger.markComplete(job.id);
        }
      };
      const run = batch
        ? drainFromLocalQueue(jobs, ledger, workers)
        : Promise.all(Array.from({ length: workers }, single)).then(() => undefined);
      await watchRun(what, run, deadlineMs(count), ledger);
      const seconds = (performance.now() - ledger.firstRunAt) / 1000;
      const cpuSeconds = cpu.elapsed();
      ledger.verify(this.label);
      const left = await jobs.pendingCount(TYPE);
      if (left !== 0) throw new PeerBenchError('not_exactly_once', `${what}: ${left} jobs still pending after the drain`);
      return { jobs: count, seconds, perSecond: count / seconds, cpuSeconds };
    });
  }

  async #sequentialAdds(count: number): Promise<RateResult> {
    return JobtreeSystem.withJobs(this.#scratch, async (jobs) => {
      const started = performance.now();
      for (let i = 0; i < count; i++) await jobs.add(TYPE, `a${i}`, { i });
      return { perSecond: count / ((performance.now() - started) / 1000) };
    });
  }

  async close(): Promise<void> {}

  async latency(samples: number, gapMs: number): Promise<LatencyResult> {
    return JobtreeSystem.withJobs(this.#scratch, async (jobs) => {
      const addedAt = new Map<string, number>();
      const latencies: number[] = [];
      const batch = this.#variant === 'batched' ? batchCalls(jobs) : undefined;
      const started = (job: Job) => latencies.push(performance.now() - (addedAt.get(job.id) ?? Number.NaN));
      let stop = false;
      // The batched worker waits in its local queue (stopping the queue ends
      // the wait); the single one in bounded accepts, so it sees `stop` soon
      // after the last job.
      const queue = batch ? new LocalQueue(jobs, TYPE, { size: LOCAL_QUEUE }) : undefined;
      const worker = (async () => {
        while (!stop) {
          if (queue) {
            const job = await queue.take();
            if (!job) continue;
            started(job);
            await queue.finish(job);
          } else {
            const job = await jobs.accept(TYPE, { timeout: 200 });
            if (!job) continue;
            started(job);
            await jobs.finish(job);
          }
        }
      })();
      await sleep(50); // let the worker block in accept first: the worker is idle
      const work = (async () => {
        for (let i = 0; i < samples; i++) {
          const id = `l${i}`;
          addedAt.set(id, performance.now());
          await jobs.add(TYPE, id, { i });
          await sleep(gapMs);
        }
        while (latencies.length < samples) await sleep(10);
      })();
      await watchRun(`${this.label}, add -> start latency`, work, deadlineMs(samples * 10));
      stop = true;
      await queue?.stop();
      await worker;
      return latencyOf(latencies);
    });
  }
}

/** A running set of jobtree processors, as far as this benchmark needs it. */
interface RunningProcessors {
  /** Jobs finished so far are reported here, if the API reports them. */
  onFinished?(listener: (id: string) => void): void;
  stop(): Promise<void>;
}

/** A handler function: it runs on the main thread. */
type HandlerFunction = (job: { id: string }) => unknown;

/** Starts processors for `type` on `jobs`' store, with `handler` (a module URL, or a function) and at most `maxJobs` running. */
type StartProcessors = (jobs: Jobs, type: string, handler: string | HandlerFunction, maxJobs: number) => Promise<RunningProcessors>;

/** The scheduler of jobtree's processors, as far as this benchmark uses it. */
interface SchedulerSlice {
  events: { on(event: 'job:finished', listener: (event: { id: string; state: string }) => void): unknown };
  stop(): Promise<void>;
}
type StartScheduler = (options: { jobs: Jobs; type: string; handler: string | HandlerFunction; maxJobs: number }) => Promise<SchedulerSlice>;

/**
 * How this build of jobtree runs handlers in worker threads: its exported
 * `startScheduler`, when there is one; otherwise why the processors variant
 * cannot run.
 */
export async function findProcessors(): Promise<StartProcessors | string> {
  const jobtree: Record<string, unknown> = await import('jobtree');
  if (typeof jobtree.startScheduler !== 'function') return 'this build of jobtree does not export startScheduler';
  const startScheduler = jobtree.startScheduler as StartScheduler;
  return async (jobs, type, handler, maxJobs) => {
    const scheduler = await startScheduler({ jobs, type, handler, maxJobs });
    return {
      onFinished: (listener) => {
        scheduler.events.on('job:finished', (event) => {
          if (event.state === 'finished') listener(event.id);
        });
      },
      stop: () => scheduler.stop(),
    };
  };
}

/**
 * jobtree's processors: the scheduler runs handlers in worker threads. It
 * gets `maxJobs: workers` and the default `threads` (at most the core count),
 * against BullMQ's one thread per concurrent job: the same number of handlers
 * at once, on as many threads as there are cores (see the README's threads row).
 * In the drain rows the handler is a function on the main thread (as
 * BullMQ's Worker runs its processor), `maxJobs: workers`.
 */
export class JobtreeProcessorsSystem implements BenchSystem {
  readonly label = 'jobtree processors';
  readonly durability = DURABILITY;
  readonly #scratch: string;
  readonly #start: StartProcessors;

  constructor(scratch: string, start: StartProcessors) {
    this.#scratch = scratch;
    this.#start = start;
  }

  /** Handlers on the main thread: each run is counted by the handler itself. */
  drain(count: number, workers: number): Promise<DrainResult> {
    return this.#drain(count, workers, 'm', undefined);
  }

  threadedDrain(count: number, workers: number): Promise<DrainResult> {
    return this.#drain(count, workers, 'p', new URL('../handlers/jobtree-noop.mjs', import.meta.url).href);
  }

  /** Fills the queue, then drains it with `workers` handlers: the module `handlerUrl` in threads, else a function on the main thread. */
  async #drain(count: number, workers: number, prefix: string, handlerUrl: string | undefined): Promise<DrainResult> {
    return JobtreeSystem.withJobs(this.#scratch, async (jobs) => {
      const ledger = new CompletionLedger(prefix, count);
      const runs = handlerUrl === undefined ? undefined : listenToHandlerRuns(ledger);
      let processors: RunningProcessors | undefined;
      try {
        const cpu = new CpuMeter([]);
        cpu.start();
        await fillJobs(jobs, ledger, batchCalls(jobs));
        const handler = handlerUrl ?? ((job: { id: string }) => void ledger.markRun(job.id));
        processors = await this.#start(jobs, TYPE, handler, workers);
        processors.onFinished?.((id) => ledger.markComplete(id));
        const where = handlerUrl === undefined ? 'main thread' : 'threads';
        const what = `${this.label} (${where}), drain ${count.toLocaleString('en-US')} @ ${workers}`;
        await watchRun(what, Promise.all([runs?.allRun(), ledger.allComplete()]), deadlineMs(count), ledger);
        const seconds = (performance.now() - ledger.firstRunAt) / 1000;
        const cpuSeconds = cpu.elapsed();
        ledger.verify(this.label);
        const states = await jobs.foldJobs(TYPE, (finished, job) => finished + (job.state === 'finished' ? 1 : 0), 0);
        if (states !== count) throw new PeerBenchError('not_exactly_once', `${what}: ${states} of ${count} jobs finished in the store`);
        return { jobs: count, seconds, perSecond: count / seconds, cpuSeconds };
      } finally {
        runs?.close();
        await processors?.stop();
      }
    });
  }

  async close(): Promise<void> {}
}
