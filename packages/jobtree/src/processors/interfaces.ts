// The public types of job processors and their scheduler, in one place.

import type { FlowChild, JobDataOf, JobTypes, Jobs, JsonValue } from '@jobtree/core';
import type { Clock as AppClock } from '../clock.js';
import type { AbortCause, HandlerAbort } from './handler-abort.js';
import type { HistoryEventType } from './history.js';
import type { Backoff, RetryPredicate } from './retry-policy.js';

export type { AbortCause, HandlerAbort };

/** What a handler gets: a plain copy of the job (the lock stays with the scheduler). */
export interface HandlerJob<D = JsonValue> {
  readonly type: string;
  readonly id: string;
  /** The job's data as of its accept, or its last `ctx.update`. */
  readonly data: D;
  readonly priority: number;
  /** Epoch seconds. */
  readonly scheduledTime: number;
  readonly continuous: boolean;
  /** 1 for a first run; n + 1 after n crashes in a row. */
  readonly attempt: number;
}

export interface HandlerContext<D = JsonValue> {
  /**
   * Aborts when the job was removed (`cancel`), when the scheduler rotates
   * it out for a waiting job (`rotation`), when the scheduler stops
   * (`shutdown`) or when the run has lasted its `maxRunMs` (`timeout`: the
   * run counts as a failed attempt); `signal.reason` is a {@link HandlerAbort}. A handler that
   * ignores it longer than the grace period loses its thread (in threads),
   * or its run (on the main thread, where nothing can end it: the run
   * counts as lost and whatever the handler does later is ignored).
   */
  readonly signal: AbortSignal;
  /**
   * Records progress: replaces the job's data in the store (subscribers see
   * it) and is where a rotated or restarted run resumes. Rejects with a
   * `SchedulerError` of code `halt` when the job is no longer this
   * processor's (its signal aborts too).
   */
  update(data: D): Promise<void>;
  /**
   * The job's children when it is a flow's parent (see `app.addFlow`), each
   * with its state and outcome: a succeeded child's `result`, a failed
   * one's `error`; `[]` for a job with none. Read from the store at each
   * call.
   */
  childResults(): Promise<FlowChild[]>;
}

/**
 * A handler: runs one job and resolves with its result (stored apart from
 * the job's data; JSON, as job data is). On the main thread it gets the
 * scheduler's own copy of the job: read it, do not change it (progress goes
 * through `ctx.update`).
 */
export type Handler<D = JsonValue, R = unknown> = (job: HandlerJob<D>, ctx: HandlerContext<D>) => Promise<R> | R;

/**
 * A handler module's default export, made by `defineHandler(import.meta.url, fn)`:
 * the module's URL (worker threads load it from there) and the function,
 * typed by the job data and result.
 */
export interface HandlerDefinition<D = JsonValue, R = unknown> {
  readonly url: string;
  readonly run: Handler<D, R>;
}

/**
 * A handler fit for job type `T`: when `T` is declared in `JobTypes` (by
 * declaration merging), a handler typed for other data is a type error.
 */
export type HandlerFor<T extends string, D, R> = T extends keyof JobTypes
  ? Handler<JobDataOf<T>, R> | HandlerDefinition<JobDataOf<T>, R> | string | URL
  : Handler<D, R> | HandlerDefinition<D, R> | string | URL;

/** How many crashes in a row a job may have before it is given up. */
export interface Attempts {
  /** @default 3 */
  oneShot?: number;
  /** @default Infinity (a continuous job is retried for ever, with backoff) */
  continuous?: number;
}

/** The scheduler's tunables (the `replicator` config section of couch_replicator_scheduler). */
export interface SchedulerOptions {
  /**
   * Jobs running at once on this scheduler.
   * @default 500
   */
  maxJobs?: number;
  /**
   * At most this many continuous jobs are rotated out per interval when the
   * slots are full and jobs wait.
   * @default 20
   */
  maxChurn?: number;
  /**
   * Milliseconds between reschedules (stop excess jobs, start pending ones, rotate).
   * @default 60_000
   */
  interval?: number;
  /**
   * Events kept in each job's history.
   * @default 20
   */
  maxHistory?: number;
  /**
   * Seconds: a run that lasts longer than this before crashing starts a new
   * streak of consecutive crashes (its backoff starts again at 30 s).
   * @default 120
   */
  healthThreshold?: number;
}

/** The part of the application's clock the scheduler uses (any application clock fits). */
export type Clock = Pick<AppClock, 'now' | 'setTimeout' | 'clearTimeout'>;

export interface ProcessorOptions extends SchedulerOptions {
  /**
   * Crashes in a row after which a job is given up: it finishes `failed`,
   * its data (its input) kept, its last error and its history stored apart
   * (`getJob` reads them as `error`). The count is the store's, so a restart
   * carries on from it. A number applies to both kinds of job.
   * @default { oneShot: 3, continuous: Infinity }
   */
  attempts?: number | Attempts;
  /**
   * The wait before a failed job's next attempt: a function
   * `(attempt, error) => ms` (`attempt` is the one that just failed, 1
   * first; `error` its `{ name, message }`; it runs on the main thread), or
   * a schedule `{ type: 'exponential' | 'fixed', delayMs, maxDelayMs?, jitter? }`
   * (see `BackoffSchedule`). The time of the next attempt is stored with the
   * job, so a restart keeps it. A job's own `retry.backoff` overrides it.
   * @default { type: 'exponential', delayMs: 30_000, maxDelayMs: 30_000 · 2^10 }
   */
  backoff?: Backoff;
  /**
   * Whether a failed run's job gets another attempt, by its error; `false`
   * gives it up at once (it ends `failed`). A handler can say so itself by
   * throwing a `NonRetryableError`.
   * @default every failure is retried while attempts last
   */
  retryIf?: RetryPredicate;
  /**
   * Milliseconds one run may last: then its signal aborts (cause `timeout`)
   * and the run counts as a failed attempt, retried per the policy; a
   * handler that ignores the signal loses its thread after `graceMs`. A
   * job's own `retry.maxRunMs` overrides it.
   * @default no limit
   */
  maxRunMs?: number;
  /**
   * Where the handlers run: `main`, on the main thread's event loop, beside
   * the application's own objects (for I/O-bound handlers); `threads`, in
   * worker threads (for CPU-bound or untrusted code: a stuck handler costs
   * its thread, not the application). Only a handler given by definition
   * or module can run in threads.
   * @default `main` for a handler function, `threads` for a definition or a module
   */
  runIn?: 'main' | 'threads';
  /**
   * Milliseconds the main thread's event loop may be held up while
   * handlers run on it (`runIn: 'main'`) before it is reported: a
   * `loop:blocked` event naming the jobs that were running, a warning in
   * the app's log and its metrics.
   * @default 200
   */
  blockedLoopMs?: number;
  /**
   * Worker threads running handlers (`runIn: 'threads'`). Jobs share threads: each thread runs
   * many handlers concurrently. In an app, the handler threads are one pool
   * for every type (`startJobs({ handlerThreads })`): this is the most of
   * them this type's runs spread over. A scheduler started alone starts
   * this many threads of its own.
   * @default min(maxJobs, available parallelism), at least 1
   */
  threads?: number;
  /**
   * Milliseconds a handler has to end after its signal aborted before its
   * thread is terminated (and, at `stop`, the default grace period).
   * @default 5_000
   */
  graceMs?: number;
  /**
   * Milliseconds a handler thread (`runIn: 'threads'`) may go without returning to its event loop
   * (a synchronous loop) before it is terminated and the handler that held it
   * counts as crashed. `Infinity` turns the check off.
   * @default 10_000
   */
  stuckThreadMs?: number;
  /**
   * Milliseconds between heartbeats of the jobs the scheduler holds (each is
   * an `update` of the job, in one batch).
   * @default a third of the type's activity timeout
   */
  heartbeatMs?: number;
  /**
   * Milliseconds an idle scheduler waits in one blocking accept before it
   * asks again (a new job wakes it at once).
   * @default min(interval, 1_000)
   */
  acceptWaitMs?: number;
  /**
   * The one source of time (the application's clock): history times,
   * backoffs, intervals, heartbeats and grace periods. A clock other than the
   * system clock also decides which jobs are due (accepts are bounded by its
   * time). Thread watchdogs (`stuckThreadMs`) use real time.
   * @default the system clock
   */
  clock?: Clock;
}

export interface StartSchedulerOptions<D = JsonValue, R = unknown, T extends string = string> extends ProcessorOptions {
  /** The jobs API the scheduler accepts, heartbeats and finishes through (main thread). */
  jobs: Jobs;
  type: T;
  /**
   * A handler function (it runs on the main thread), a handler definition,
   * or the URL or path of a module whose default export is one (or a
   * handler function); see `runIn`.
   */
  handler: Handler<D, R> | HandlerDefinition<D, R> | string | URL;
}

/** One history event as JSON. */
export interface HistoryEventJson {
  /** ISO 8601. */
  timestamp: string;
  type: HistoryEventType;
  reason?: string;
}

/** One job, shaped like an entry of CouchDB's `_scheduler/jobs`. */
export interface JobSummary {
  id: string;
  type: string;
  /** `crashing`: not running, and its last run crashed (it waits out its backoff). */
  state: 'pending' | 'running' | 'crashing';
  /** The last crash's message while crashing, else null. */
  info: string | null;
  error_count: number;
  /** The handler thread's id while running, else null. */
  pid: string | null;
  node: string;
  continuous: boolean;
  /** ISO 8601 of the job's oldest event kept. */
  start_time: string;
  /** ISO 8601 of its newest event. */
  last_updated: string;
  history: HistoryEventJson[];
}

/** All jobs of a scheduler, shaped like CouchDB's `_scheduler/jobs` response. */
export interface SchedulerJobs {
  total_rows: number;
  offset: number;
  jobs: JobSummary[];
}

/** The scheduler's events, one namespace per subject. */
export interface SchedulerEventTypes {
  'job:started': [event: { id: string; attempt: number }];
  'job:finished': [event: { id: string; state: 'pending' | 'finished' }];
  /** A run crashed and the job will run again from `retryAt` (epoch ms); told once the store has it so (pending, its attempts counted). */
  'job:crashed': [event: { id: string; error: string; attempt: number; retryAt: number }];
  /** Out of attempts: the job finished `failed`, with its error and history (see `JobInfo.error`); told once the store has it so. */
  'job:failed': [event: { id: string; error: string; attempts: number }];
  /** A run was stopped without a crash; the job goes back to the queue (rotation, shutdown) or restarts here (thread_lost). */
  'job:stopped': [event: { id: string; cause: Exclude<AbortCause, 'cancel' | 'timeout'> | 'thread_lost' }];
  /**
   * The job is no longer this scheduler's: cancelled or removed, or taken
   * back by the activity monitor (then pending, or running elsewhere),
   * while it held the job or before its end was written; its run's end is
   * dropped.
   */
  'job:cancelled': [event: { id: string }];
  /**
   * Handlers on the main thread (`runIn: 'main'`) held its event loop up
   * longer than `blockedLoopMs`: for `lagMs`, while these jobs ran (or
   * ended); the one that held it is among them.
   */
  'loop:blocked': [event: { lagMs: number; jobs: string[] }];
  /**
   * A handler thread (`runIn: 'threads'`) exited before it ran a job,
   * outside any job's code: while it started or loaded its modules, or
   * after (killed from outside, out of memory, a module whose top level
   * ends its thread, at once or from a timer). The runs it was to take are
   * lost, with no culprit named, and the next thread starts `delayMs`
   * later, a wait that doubles, up to 5 s, while threads keep exiting
   * before they run a job. In an app every type sharing the threads hears
   * it (and `app.events` once).
   */
  'threads:restarting': [event: { reason: string; failures: number; delayMs: number }];
  /** A store operation failed in the background (the scheduler carries on). */
  error: [error: Error];
}

export interface StopOptions {
  /**
   * Milliseconds running handlers have to end after their signal aborts;
   * handlers still running then lose their threads. Their jobs go back to
   * the queue either way.
   * @default the scheduler's graceMs
   */
  graceMs?: number;
}
