// graphile-worker on Postgres in the peer benchmark, in two setups: as it
// comes (each worker fetches and completes its own jobs, one query each),
// and with its local queue (the pool locks `LOCAL_QUEUE` jobs per query and
// hands them out) plus batched completion (completions of the same tick
// share one query), the setup its documentation recommends for throughput.

import type { BenchSystem, DrainResult, FirstJobResult, LatencyResult, RateResult } from '../bench-system.js';
import { isMeasuredSample, LATENCY_WARM_UP_SAMPLES, latencyOf, latencySampleId, sleep } from '../bench-system.js';
import { CompletionLedger } from '../completion-ledger.js';
import { PeerBenchError } from '../errors.js';
import type { GraphileModule, GraphileRunner, GraphileUtils, GraphileWorkerOptions, PgClient, PgModule } from '../peer-modules.js';
import { CpuMeter } from '../process-cpu.js';
import { deadlineMs, watchRun } from '../run-watch.js';
import type { PostgresServer } from '../servers.js';
import { LOCAL_QUEUE } from './local-queue.js';

const TASK = 'noop';
const FILL_BATCH = 1_000;
const JOBS_TABLE = 'graphile_worker._private_jobs';

export type GraphileVariant = 'as it comes' | 'local queue';

export class GraphileSystem implements BenchSystem {
  readonly label: string;
  readonly key: string;
  readonly durability = 'fsync on';
  readonly #postgres: PostgresServer;
  readonly #graphile: GraphileModule;
  readonly #variant: GraphileVariant;
  readonly #sql: PgClient;
  readonly #utils: GraphileUtils;
  readonly #logger: object;
  readonly #log: { quiet: boolean };

  static async open(postgres: PostgresServer, graphile: GraphileModule, pg: PgModule, variant: GraphileVariant): Promise<GraphileSystem> {
    // Errors and warnings only: graphile logs a line per worker start
    // otherwise. Silent once closing: a runner interrupted by Ctrl-C reports
    // every connection that the Postgres shutdown ends.
    const log = { quiet: false };
    const logger = new graphile.Logger(() => (level, message) => {
      if (!log.quiet && (level === 'error' || level === 'warning')) console.error(`graphile-worker ${level}: ${message}`);
    });
    const utils = await graphile.makeWorkerUtils({ connectionString: postgres.connectionString, logger });
    await utils.migrate();
    const sql = new pg.Client({ connectionString: postgres.connectionString });
    await sql.connect();
    await checkGraphileTables(sql);
    return new GraphileSystem(postgres, graphile, variant, sql, utils, logger, log);
  }

  private constructor(
    postgres: PostgresServer,
    graphile: GraphileModule,
    variant: GraphileVariant,
    sql: PgClient,
    utils: GraphileUtils,
    logger: object,
    log: { quiet: boolean },
  ) {
    this.#postgres = postgres;
    this.#graphile = graphile;
    this.#variant = variant;
    this.#sql = sql;
    this.#utils = utils;
    this.#logger = logger;
    this.#log = log;
    this.label = variant === 'local queue' ? 'graphile batched' : 'graphile';
    this.key = variant === 'local queue' ? 'graphile-batched' : 'graphile';
    // Adding a job is the same call in both setups: measured once.
    if (variant === 'as it comes') this.sequentialAdds = this.#sequentialAdds;
  }

  sequentialAdds?: (count: number) => Promise<RateResult>;

  /** Each run starts from an empty, vacuumed jobs table (the previous run's dead rows would slow it). */
  async #reset(): Promise<void> {
    await this.#sql.query(`truncate ${JOBS_TABLE} cascade`);
    await this.#sql.query(`vacuum analyze ${JOBS_TABLE}`);
  }

  async #jobsLeft(): Promise<number> {
    const { rows } = await this.#sql.query(`select count(*)::int as n from ${JOBS_TABLE}`);
    return Number(rows[0]?.n ?? Number.NaN);
  }

  #run(workers: number, task: (payload: unknown) => Promise<void>): Promise<GraphileRunner> {
    const worker: GraphileWorkerOptions = {
      connectionString: this.#postgres.connectionString,
      concurrentJobs: workers,
      // graphile's advice: max(10, concurrentJobs + 2).
      maxPoolSize: Math.max(10, workers + 2),
      pollInterval: 2_000,
      ...(this.#variant === 'local queue'
        ? { localQueue: { size: Math.max(LOCAL_QUEUE, workers) }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
        : {}),
    };
    return this.#graphile.run({ noHandleSignals: true, logger: this.#logger, taskList: { [TASK]: task }, preset: { worker } });
  }

  async drain(count: number, workers: number): Promise<DrainResult> {
    await this.#reset();
    const ledger = new CompletionLedger('g', count);
    const cpu = new CpuMeter([this.#postgres.pid]);
    cpu.start();
    for (let start = 0; start < count; start += FILL_BATCH) {
      const specs = [];
      for (let i = start; i < Math.min(count, start + FILL_BATCH); i++) specs.push({ identifier: TASK, payload: { id: ledger.id(i) } });
      await this.#utils.addJobs(specs);
    }
    // Planner statistics for the filled table, as autovacuum keeps them for a
    // running service: after the reset's analyze of an empty table, the
    // plan of graphile's fetch read the 100,000 queued rows as if there were
    // none, and the drain ran at half its rate and twice its CPU per job.
    await this.#sql.query(`analyze ${JOBS_TABLE}`);
    const runner = await this.#run(workers, async (payload) => {
      ledger.markRun((payload as { id: string }).id);
    });
    const what = `${this.label}, drain ${count.toLocaleString('en-US')} @ ${workers}`;
    try {
      // graphile completes a job by deleting its row, and does not tell the
      // task when that commits: the drain ends once every handler ran and
      // the table is empty.
      const done = (async () => {
        while (ledger.ran < count) await sleep(10);
        while ((await this.#jobsLeft()) > 0) await sleep(10);
      })();
      await watchRun(what, done, deadlineMs(count), ledger);
      const seconds = (performance.now() - ledger.firstRunAt) / 1000;
      const cpuSeconds = cpu.elapsed();
      // A row is deleted once: an empty table means each job completed once.
      for (let i = 0; i < count; i++) ledger.markComplete(ledger.id(i));
      ledger.verify(this.label);
      return { jobs: count, seconds, perSecond: count / seconds, cpuSeconds };
    } finally {
      await runner.stop();
    }
  }

  /**
   * One job waits; from `run()` resolving (the runner started) until the
   * job's row is gone (graphile deletes a completed job's row; the table is
   * polled every millisecond once the task has run).
   */
  async firstJob(): Promise<FirstJobResult> {
    await this.#reset();
    await this.#utils.addJob(TASK, { id: 'first' });
    let ran = false;
    const runner = await this.#run(1, async () => {
      ran = true;
    });
    const started = performance.now();
    try {
      const done = (async () => {
        while (!ran) await sleep(1);
        while ((await this.#jobsLeft()) > 0) await sleep(1);
        return performance.now();
      })();
      const at = await watchRun(`${this.label}, first job`, done, 60_000);
      return { firstJobMs: at - started };
    } finally {
      await runner.stop();
    }
  }

  async #sequentialAdds(count: number): Promise<RateResult> {
    await this.#reset();
    const started = performance.now();
    for (let i = 0; i < count; i++) await this.#utils.addJob(TASK, { id: `a${i}` });
    const perSecond = count / ((performance.now() - started) / 1000);
    await this.#reset();
    return { perSecond };
  }

  async latency(samples: number, gapMs: number): Promise<LatencyResult> {
    await this.#reset();
    const addedAt = new Map<string, number>();
    const latencies: number[] = [];
    const runner = await this.#run(1, async (payload) => {
      const { id } = payload as { id: string };
      if (isMeasuredSample(id)) latencies.push(performance.now() - (addedAt.get(id) ?? Number.NaN));
    });
    try {
      await sleep(200); // the worker is connected, listening, and idle before the first add
      const work = (async () => {
        for (let i = 0; i < LATENCY_WARM_UP_SAMPLES + samples; i++) {
          const id = latencySampleId(i);
          addedAt.set(id, performance.now());
          await this.#utils.addJob(TASK, { id });
          await sleep(gapMs);
        }
        while (latencies.length < samples) await sleep(10);
      })();
      await watchRun(`${this.label}, add -> start latency`, work, deadlineMs(samples * 10));
      return latencyOf(latencies);
    } finally {
      await runner.stop();
    }
  }

  async close(): Promise<void> {
    this.#log.quiet = true;
    await this.#utils.release();
    await this.#sql.end();
  }
}

/** graphile's tables exist once its migrations ran; fails loudly if its internals moved. */
async function checkGraphileTables(sql: PgClient): Promise<void> {
  const { rows } = await sql.query(`select to_regclass('${JOBS_TABLE}') is not null as present`);
  if (rows[0]?.present !== true) throw new PeerBenchError('server_failed', `graphile-worker has no ${JOBS_TABLE} table`);
}
