// The slices of bullmq, graphile-worker, pg and ioredis that the peer
// benchmark uses, typed here so that `tsc` over the repository passes
// without them installed: they live in bench/peers/node_modules, which only
// the benchmark's first run creates. Each loader imports its package by a
// computed name (so the compiler does not resolve it) and states the slice.

import type { EventEmitter } from 'node:events';

// --- ioredis ---------------------------------------------------------------

export interface RedisClient {
  ping(): Promise<string>;
  flushall(): Promise<string>;
  quit(): Promise<string>;
}

export interface IoRedisModule {
  Redis: new (options: { host: string; port: number; maxRetriesPerRequest: null; lazyConnect?: boolean }) => RedisClient;
}

// --- bullmq ----------------------------------------------------------------

export interface BullConnection {
  host: string;
  port: number;
  /** BullMQ's workers refuse a connection that gives up on commands. */
  maxRetriesPerRequest: null;
}

export interface BullJob {
  id?: string;
  data: { id: string };
}

export interface BullQueue {
  add(name: string, data: { id: string }): Promise<BullJob>;
  addBulk(jobs: { name: string; data: { id: string } }[]): Promise<BullJob[]>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  waitUntilReady(): Promise<unknown>;
  close(): Promise<void>;
}

export interface BullWorker {
  on(event: 'completed', listener: (job: BullJob) => void): this;
  on(event: 'failed', listener: (job: BullJob | undefined, error: Error) => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  waitUntilReady(): Promise<unknown>;
  close(force?: boolean): Promise<void>;
}

export interface BullWorkerOptions {
  connection: BullConnection;
  concurrency: number;
  /** Sandboxed processors in worker threads instead of child processes. */
  useWorkerThreads?: boolean;
  /** Options of those worker threads (BullMQ passes the process's execArgv unless these say otherwise). */
  workerThreadsOptions?: { execArgv?: string[] };
  removeOnComplete?: { count: number };
  removeOnFail?: { count: number };
}

export interface BullMqModule {
  Queue: new (
    name: string,
    options: { connection: BullConnection; defaultJobOptions?: { removeOnComplete?: boolean; removeOnFail?: boolean } },
  ) => BullQueue;
  Worker: new (name: string, processor: string | ((job: BullJob) => Promise<void>), options: BullWorkerOptions) => BullWorker;
}

// --- graphile-worker -------------------------------------------------------

export interface GraphileJob {
  id: string;
  payload: unknown;
}

export interface GraphileWorkerOptions {
  connectionString: string;
  concurrentJobs: number;
  maxPoolSize: number;
  pollInterval: number;
  localQueue?: { size: number };
  /** -1: each completion is its own query; >= 0: completions within this many ms share one. */
  completeJobBatchDelay?: number;
  failJobBatchDelay?: number;
}

export type GraphileLogFactory = () => (level: string, message: string) => void;

export interface GraphileRunner {
  stop(): Promise<void>;
  promise: Promise<void>;
  events: EventEmitter;
}

export interface GraphileUtils {
  addJob(identifier: string, payload: unknown): Promise<GraphileJob>;
  addJobs(specs: readonly { identifier: string; payload: unknown }[]): Promise<readonly GraphileJob[]>;
  migrate(): Promise<void>;
  release(): Promise<void>;
}

export interface GraphileModule {
  Logger: new (factory: GraphileLogFactory) => object;
  run(options: {
    noHandleSignals: boolean;
    logger: object;
    taskList: Record<string, (payload: unknown) => Promise<void>>;
    preset: { worker: GraphileWorkerOptions };
  }): Promise<GraphileRunner>;
  makeWorkerUtils(options: { connectionString: string; logger: object }): Promise<GraphileUtils>;
}

// --- pg --------------------------------------------------------------------

export interface PgClient {
  connect(): Promise<void>;
  query(text: string): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}

export interface PgModule {
  Client: new (options: { connectionString: string }) => PgClient;
}

// --- loaders ---------------------------------------------------------------

/** Imports a package from bench/peers/node_modules without the compiler resolving it. */
async function importPeer<T>(name: string): Promise<T> {
  const module: { default?: unknown } = await import(name);
  // pg and ioredis are CommonJS: their exports may arrive under `default` only.
  const fallback = typeof module.default === 'object' || typeof module.default === 'function' ? module.default : {};
  return { ...fallback, ...module } as T;
}

export const loadBullMq = (): Promise<BullMqModule> => importPeer('bullmq');
export const loadIoRedis = (): Promise<IoRedisModule> => importPeer('ioredis');
export const loadPg = (): Promise<PgModule> => importPeer('pg');

/**
 * graphile-worker reads NO_LOG_SUCCESS once, when it loads: without it, it
 * formats a log line for every job, which is not what anyone measuring it
 * would run.
 */
export async function loadGraphile(): Promise<GraphileModule> {
  process.env.NO_LOG_SUCCESS = '1';
  return importPeer('graphile-worker');
}
