// BullMQ on Redis in the peer benchmark: one Worker with `concurrency` N
// (BullMQ's in-process workers), sandboxed processors in worker threads for
// the threaded drain, and jobs removed on completion (what its users run in
// production; a kept job would only cost Redis memory and writes).

import type { BenchSystem, DrainResult, LatencyResult, RateResult } from '../bench-system.js';
import { latencyOf, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import type { BullMqModule, BullQueue, BullWorker, IoRedisModule } from '../peer-modules.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import type { RedisServer } from '../servers.js';
import { listenToHandlerRuns } from './handler-runs.js';

const FILL_BATCH = 1_000;

export class BullMqSystem implements BenchSystem {
  readonly label = 'BullMQ';
  readonly durability = 'AOF everysec';
  readonly #redis: RedisServer;
  readonly #bull: BullMqModule;
  readonly #ioredis: IoRedisModule;
  #runs = 0;

  constructor(redis: RedisServer, bull: BullMqModule, ioredis: IoRedisModule) {
    this.#redis = redis;
    this.#bull = bull;
    this.#ioredis = ioredis;
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

  async #drain(count: number, workers: number, threads: boolean): Promise<DrainResult> {
    const { name, queue } = await this.#queue();
    const ledger = new CompletionLedger('b', count);
    const runs = threads ? listenToHandlerRuns(ledger) : undefined;
    let worker: BullWorker | undefined;
    try {
      const cpu = new CpuMeter([this.#redis.pid]);
      cpu.start();
      await this.#fill(queue, ledger);
      worker = threads
        ? new this.#bull.Worker(name, new URL('../handlers/bullmq-noop.cjs', import.meta.url).pathname, {
            connection: this.#redis.connection,
            concurrency: workers,
            useWorkerThreads: true,
          })
        : new this.#bull.Worker(
            name,
            async (job) => {
              ledger.markRun(job.data.id);
            },
            { connection: this.#redis.connection, concurrency: workers },
          );
      const failure = this.#observe(worker, ledger);
      const what = `${this.label}${threads ? ' sandboxed' : ''}, drain ${count.toLocaleString('en-US')} @ ${workers}`;
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

  drain(count: number, workers: number): Promise<DrainResult> {
    return this.#drain(count, workers, false);
  }

  threadedDrain(count: number, workers: number): Promise<DrainResult> {
    return this.#drain(count, workers, true);
  }

  async sequentialAdds(count: number): Promise<RateResult> {
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
    const worker = new this.#bull.Worker(
      name,
      async (job) => {
        latencies.push(performance.now() - (addedAt.get(job.data.id) ?? Number.NaN));
      },
      { connection: this.#redis.connection, concurrency: 1 },
    );
    try {
      await worker.waitUntilReady();
      await sleep(50); // the worker is idle, blocked on Redis, before the first add
      const work = (async () => {
        for (let i = 0; i < samples; i++) {
          const id = `l${i}`;
          addedAt.set(id, performance.now());
          await queue.add('noop', { id });
          await sleep(gapMs);
        }
        while (latencies.length < samples) await sleep(10);
      })();
      await watchRun(`${this.label}, add -> start latency`, work, deadlineMs(samples * 10));
      return latencyOf(latencies);
    } finally {
      await worker.close();
      await queue.close();
    }
  }

  async close(): Promise<void> {}
}
