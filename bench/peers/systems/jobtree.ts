// jobtree's engine in the peer benchmark, through the packages' public API
// only: `openJobs` from @jobtree/core with in-process workers (N concurrent
// accept -> finish loops, one job per call), and the batch calls with the
// core's LocalQueue shared by the workers when the core has them. What users
// are told to use, `app.process`, is app-process.ts'. Under `--retention`
// the store is opened as an app opens it (retention-setting.ts).

import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Job, Jobs, LocalQueue, openJobs } from '@jobtree/core';
import type { BenchSystem, DrainResult, FirstJobResult, LatencyResult, RateResult } from '../bench-system.js';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencyOf, latencySampleId, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import { LOCAL_QUEUE } from './local-queue.js';
import { type RetentionSetting, retentionOption } from './retention-setting.js';

export const TYPE = 'bench';
export const TYPE_TIMEOUT_SECONDS = 60;
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

export function batchCalls(jobs: Jobs): BatchCalls | undefined {
  return hasBatchCalls() ? (jobs as unknown as BatchCalls) : undefined;
}

/** Fills the queue with the ledger's jobs: with addMany when `batch` is given, else with single adds, 64 in flight. */
export async function fillJobs(jobs: Jobs, ledger: CompletionLedger, batch: BatchCalls | undefined): Promise<void> {
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

export const DURABILITY = 'fsync, group commit';

export class JobtreeSystem implements BenchSystem {
  readonly label: string;
  readonly key: string;
  readonly durability = DURABILITY;
  readonly #scratch: string;
  readonly #variant: JobtreeVariant;
  readonly #retention: RetentionSetting | undefined;

  /** `retention`: open the store with `startJobs`, retention on or off; undefined: with `openJobs`. */
  constructor(scratch: string, variant: JobtreeVariant, retention?: RetentionSetting) {
    this.#scratch = scratch;
    this.#variant = variant;
    this.#retention = retention;
    this.label = variant === 'batched' ? 'LocalQueue' : 'jobtree single calls';
    this.key = variant === 'batched' ? 'local-queue' : 'jobtree-single';
    // Adding one job is the same call in both variants, and in app.process: measured by the LocalQueue column.
    if (variant === 'batched') {
      this.sequentialAdds = this.#sequentialAdds;
      this.firstJob = this.#firstJob;
    }
  }

  sequentialAdds?: (count: number) => Promise<RateResult>;
  firstJob?: () => Promise<FirstJobResult>;

  /** One job waits; from the LocalQueue being made until that job's finish resolved. */
  async #firstJob(): Promise<FirstJobResult> {
    return this.#withJobs(async (jobs) => {
      await jobs.add(TYPE, 'first', {});
      const started = performance.now();
      const queue = new LocalQueue(jobs, TYPE, { size: LOCAL_QUEUE });
      try {
        const job = await queue.take();
        if (job === undefined) throw new PeerBenchError('not_exactly_once', 'LocalQueue: the waiting job was not taken');
        await queue.finish(job);
        return { firstJobMs: performance.now() - started };
      } finally {
        await queue.stop();
      }
    });
  }

  /**
   * Opens a fresh store in the scratch folder (with `openJobs`, or under
   * `--retention` as an app with its jobs handle), runs `body`, closes and
   * deletes it.
   */
  async #withJobs<T>(body: (jobs: Jobs) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(this.#scratch, 'jobtree-'));
    try {
      if (this.#retention === undefined) {
        const jobs = await openJobs({ path: dir });
        try {
          await jobs.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
          return await body(jobs);
        } finally {
          await jobs.close();
        }
      }
      // Loaded only here: the column without --retention loads the core alone, as it always did.
      const { startJobs } = await import('jobtree');
      const app = await startJobs({ path: dir, logLevel: 'silent', ...retentionOption(this.#retention) });
      try {
        await app.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
        return await body(app.jobs);
      } finally {
        await app.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async drain(count: number, workers: number): Promise<DrainResult> {
    return this.#withJobs(async (jobs) => {
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
    return this.#withJobs(async (jobs) => {
      const started = performance.now();
      for (let i = 0; i < count; i++) await jobs.add(TYPE, `a${i}`, { i });
      return { perSecond: count / ((performance.now() - started) / 1000) };
    });
  }

  async close(): Promise<void> {}

  async latency(samples: number, gapMs: number): Promise<LatencyResult> {
    return this.#withJobs(async (jobs) => {
      const addedAt = new Map<string, number>();
      const latencies: number[] = [];
      const batch = this.#variant === 'batched' ? batchCalls(jobs) : undefined;
      const started = (job: Job) => {
        if (isMeasuredSample(job.id)) latencies.push(performance.now() - (addedAt.get(job.id) ?? Number.NaN));
      };
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
        for (let i = 0; i < LATENCY_WARM_UP_SAMPLES + samples; i++) {
          const id = latencySampleId(i);
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
