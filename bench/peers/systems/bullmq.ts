// BullMQ on Redis in the peer benchmark, in two setups: one Worker with
// `concurrency` N and a processor function (BullMQ's in-process worker), and
// a sandboxed processor (a processor file, run with `useWorkerThreads`: one
// worker thread per job running at once, N of them); jobs removed on
// completion (what its users run in production; a kept job would only cost
// Redis memory and writes).

import type { BenchSystem, DrainResult, FirstJobResult, LatencyResult, RateResult } from '../bench-system.js';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencyOf, latencySampleId, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import type { BullJob, BullMqModule, BullQueue, BullWorker, IoRedisModule } from '../peer-modules.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import type { RedisServer } from '../servers.js';
import { listenToHandlerRuns, listenToHandlerStarts } from './handler-runs.js';

const FILL_BATCH = 1_000;
const processorFile = (name: string) => new URL(`../handlers/${name}`, import.meta.url).pathname;

export type BullMqVariant = 'worker' | 'sandboxed';

export class BullMqSystem implements BenchSystem {
  readonly label: string;
  readonly key: string;
  readonly durability = 'AOF everysec';
  readonly #redis: RedisServer;
  readonly #bull: BullMqModule;
  readonly #ioredis: IoRedisModule;
  readonly #sandboxed: boolean;
  #runs = 0;

  constructor(redis: RedisServer, bull: BullMqModule, ioredis: IoRedisModule, variant: BullMqVariant) {
    this.#redis = redis;
    this.#bull = bull;
    this.#ioredis = ioredis;
    this.#sandboxed = variant === 'sandboxed';
    this.label = this.#sandboxed ? 'BullMQ sandboxed' : 'BullMQ';
    this.key = this.#sandboxed ? 'bullmq-sandboxed' : 'bullmq';
    // Adding a job is the same call in both setups: measured once.
    if (!this.#sandboxed) this.sequentialAdds = this.#sequentialAdds;
  }

  sequentialAdds?: (count: number) => Promise<RateResult>;

  /** A worker of this setup: `onStart` called with each job as its processor starts, where the main thread sees it. */
  #worker(name: string, concurrency: number, onStart: (job: BullJob) => void, sandboxFile = 'bullmq-noop.cjs'): BullWorker {
    const connection = this.#redis.connection;
    if (this.#sandboxed) {
      // The processor is plain CommonJS: its threads start as a user's would,
      // without the TypeScript loader this benchmark runs under (BullMQ
      // passes the process's execArgv on otherwise).
      const workerThreadsOptions = { execArgv: [] };
      return new this.#bull.Worker(name, processorFile(sandboxFile), { connection, concurrency, useWorkerThreads: true, workerThreadsOptions });
    }
    return new this.#bull.Worker(
      name,
      async (job) => {
        onStart(job);
      },
      { connection, concurrency },
    );
  }

  /** A fresh, empty Redis and a queue on it: each run starts from the same state. */
  async #queue(): Promise<{ name: string; queue: BullQueue }> {
    const client = new this.#ioredis.Redis({ ...this.#redis.connection });
    try {
      await client.flushall();
    } finally {
      await client.quit();
    }
    const name = `bench${this.#runs++}`;
    const queue = new this.#bull.Queue(name, {
      connection: this.#redis.connection,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: false },
    });
    await queue.waitUntilReady();
    return { name, queue };
  }

  async #fill(queue: BullQueue, ledger: CompletionLedger): Promise<void> {
    for (let start = 0; start < ledger.count; start += FILL_BATCH) {
      const jobs = [];
      for (let i = start; i < Math.min(ledger.count, start + FILL_BATCH); i++) jobs.push({ name: 'noop', data: { id: ledger.id(i) } });
      await queue.addBulk(jobs);
    }
  }

  /** Completions and failures of a worker, into the ledger; a failure fails the run. */
  #observe(worker: BullWorker, ledger: CompletionLedger): Promise<never> {
    const failure = new Promise<never>((_, reject) => {
      worker.on('completed', (job) => ledger.markComplete(job.data.id));
      worker.on('failed', (job, error) => reject(new PeerBenchError('not_exactly_once', `BullMQ job ${job?.data.id} failed: ${error.message}`)));
      worker.on('error', (error) => reject(new PeerBenchError('server_failed', `BullMQ worker: ${error.message}`)));
    });
    // Handled here too: a failure after the run has ended must not crash the process.
    failure.catch(() => undefined);
    return failure;
  }

  async drain(count: number, workers: number): Promise<DrainResult> {
    const threads = this.#sandboxed;
    const { name, queue } = await this.#queue();
    const ledger = new CompletionLedger('b', count);
    const runs = threads ? listenToHandlerRuns(ledger) : undefined;
    let worker: BullWorker | undefined;
    try {
      const cpu = new CpuMeter([this.#redis.pid]);
      cpu.start();
      await this.#fill(queue, ledger);
      worker = this.#worker(name, workers, (job) => ledger.markRun(job.data.id));
      const failure = this.#observe(worker, ledger);
      const what = `${this.label}, drain ${count.toLocaleString('en-US')} @ ${workers}`;
      const done = Promise.all([ledger.allComplete(), runs?.allRun()]);
      await watchRun(what, Promise.race([done, failure]), deadlineMs(count), ledger);
      const seconds = (performance.now() - ledger.firstRunAt) / 1000;
      const cpuSeconds = cpu.elapsed();
      ledger.verify(this.label);
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
      const left = Object.entries(counts).filter(([, n]) => n > 0);
      if (left.length > 0) throw new PeerBenchError('not_exactly_once', `${what}: jobs left behind: ${JSON.stringify(Object.fromEntries(left))}`);
      return { jobs: count, seconds, perSecond: count / seconds, cpuSeconds };
    } finally {
      runs?.close();
      await worker?.close();
      await queue.close();
    }
  }

  /** One job waits; from the Worker being made (it starts at once) until its `completed` event. */
  async firstJob(): Promise<FirstJobResult> {
    const { name, queue } = await this.#queue();
    let worker: BullWorker | undefined;
    try {
      await queue.add('noop', { id: 'first' });
      const started = performance.now();
      const completed = new Promise<number>((resolve, reject) => {
        worker = this.#worker(name, 1, () => undefined, 'bullmq-start.cjs');
        worker.on('completed', () => resolve(performance.now()));
        worker.on('failed', (_job, error) => reject(new PeerBenchError('not_exactly_once', `BullMQ first job failed: ${error.message}`)));
        worker.on('error', (error) => reject(new PeerBenchError('server_failed', `BullMQ worker: ${error.message}`)));
      });
      const done = await watchRun(`${this.label}, first job`, completed, 60_000);
      return { firstJobMs: done - started };
    } finally {
      await worker?.close();
      await queue.close();
    }
  }

  async #sequentialAdds(count: number): Promise<RateResult> {
    const { queue } = await this.#queue();
    try {
      const started = performance.now();
      for (let i = 0; i < count; i++) await queue.add('noop', { id: `a${i}` });
      return { perSecond: count / ((performance.now() - started) / 1000) };
    } finally {
      await queue.close();
    }
  }

  async latency(samples: number, gapMs: number): Promise<LatencyResult> {
    const { name, queue } = await this.#queue();
    const addedAt = new Map<string, number>();
    const latencies: number[] = [];
    // Epoch milliseconds with sub-millisecond precision, comparable across threads.
    const now = () => performance.timeOrigin + performance.now();
    const started = (id: string, at: number) => {
        if (isMeasuredSample(id)) latencies.push(at - (addedAt.get(id) ?? Number.NaN));
      };
    const starts = this.#sandboxed ? listenToHandlerStarts(started) : undefined;
    const worker = this.#worker(name, 1, (job) => started(job.data.id, now()), 'bullmq-start.cjs');
    try {
      await worker.waitUntilReady();
      await sleep(50); // the worker is idle, blocked on Redis, before the first add
      const work = (async () => {
        for (let i = 0; i < LATENCY_WARM_UP_SAMPLES + samples; i++) {
          const id = latencySampleId(i);
          addedAt.set(id, now());
          await queue.add('noop', { id });
          await sleep(gapMs);
        }
        while (latencies.length < samples) await sleep(10);
      })();
      await watchRun(`${this.label}, add -> start latency`, work, deadlineMs(samples * 10));
      return latencyOf(latencies);
    } finally {
      starts?.close();
      await worker.close();
      await queue.close();
    }
  }

  async close(): Promise<void> {}
}
