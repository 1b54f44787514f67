// The public types of the jobs API, in one place.

import type { Database, EmbeddedOptions, FoundationDbOptions } from '../storage/interfaces.js';
import type { JobsClock } from './jobs-clock.js';
import type { JsonValue } from './job-data.js';
import type { JobOutcome, JobState } from './job-record.js';

export type { JsonValue, JobState, JobOutcome };

/**
 * Your job types and the data their jobs carry, declared by declaration
 * merging (as graphile-worker's `Tasks`):
 *
 * ```ts
 * declare module '@jobtree/core' {
 *   interface JobTypes {
 *     email: { to: string; subject?: string };
 *   }
 * }
 * ```
 *
 * Then `add('email', id, data)` checks `data`, and `accept('email')`,
 * `getJobData('email', id)`, handlers and subscription events give it that
 * type, without generics at the call sites. Types not declared here keep
 * `JsonValue` (and accept any JSON-serialisable data).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by the application, by declaration merging
export interface JobTypes {}

/** The data of a job of type `T`: its declared type in {@link JobTypes}, else `JsonValue`. */
export type JobDataOf<T extends string> = T extends keyof JobTypes ? JobTypes[T] : JsonValue;

/** What `add` takes as data for type `T`: its declared type, else anything JSON-serialisable (checked at run time). */
export type JobInputOf<T extends string> = T extends keyof JobTypes ? JobTypes[T] : unknown;

/**
 * What `accept` hands a job processor: a plain, structured-cloneable object
 * (it crosses threads to processors). `lock` proves ownership: `update`,
 * `finish` and `resubmit` fail with `halt` once the lock is no longer the
 * job's.
 */
export interface Job<T extends string = string> {
  readonly type: T;
  readonly id: string;
  readonly lock: string;
  /** The job data as of the last accept/update. */
  readonly data: JobDataOf<T>;
  readonly priority: number;
  /** Epoch seconds. */
  readonly scheduledTime: number;
  /**
   * The job was flagged for resubmission (by `resubmit` or an `add` of a
   * running job) as of the last accept/update/resubmit: `finish` will
   * enqueue it again instead of finishing it.
   */
  readonly resubmit: boolean;
  /** A continuous job runs until stopped (see {@link AddOptions.continuous}). */
  readonly continuous: boolean;
  /** Failed attempts before this run, as the store keeps them (see `failAttempt`): a new run's count survives restarts. */
  readonly attempts: number;
  /** The job's own retry policy, as it was added (see {@link AddOptions.retry}); absent when it has none. */
  readonly retry?: JobRetryPolicy;
  /** The trace context its add carried (see {@link AddOptions.traceContext}); absent when it has none. */
  readonly traceContext?: TraceContext;
  /** The job's group (see {@link AddOptions.group}); absent when it has none. */
  readonly group?: string;
}

/**
 * A small map of strings a job carries from its add to its runs, opaque to
 * the store: the app puts the W3C `traceparent` and `tracestate` of its add
 * span there (see the app's tracing), so that a run's span joins that trace.
 */
export type TraceContext = Readonly<Record<string, string>>;

/**
 * A backoff schedule: how long a job waits after a failed run. `fixed`
 * waits `delayMs` each time; `exponential` waits `delayMs · 2^(n − 1)`
 * after n failures in a row. Either is capped at `maxDelayMs` (an
 * exponential schedule without one at `delayMs · 2^10`). `jitter` j, from 0
 * to 1, takes a random part of up to j of each wait off: the wait is uniform
 * in [d · (1 − j), d], d the wait without jitter.
 */
export interface BackoffSchedule {
  readonly type: 'exponential' | 'fixed';
  readonly delayMs: number;
  readonly maxDelayMs?: number;
  /** @default 0 */
  readonly jitter?: number;
}

/**
 * A job's own retry policy, stored with it so that whichever process runs
 * it applies it; each field given overrides its processor's option.
 */
export interface JobRetryPolicy {
  /** Failures in a row after which the job is given up (ends `failed`). */
  readonly attempts?: number;
  /** The wait before each next attempt. */
  readonly backoff?: BackoffSchedule;
  /** Milliseconds one run may last before its signal aborts (cause `timeout`) and the run counts as failed. */
  readonly maxRunMs?: number;
}

/** A job as the monitoring API reports it. */
export interface JobInfo<T extends string = string> {
  type: T;
  id: string;
  state: JobState;
  data: JobDataOf<T>;
  priority: number;
  /** Epoch seconds. */
  scheduledTime: number;
  resubmit: boolean;
  /** A continuous job runs until stopped (see {@link AddOptions.continuous}). */
  continuous: boolean;
  /**
   * Failed attempts so far (counted by `failAttempt` and `fail`); back to 0
   * when the job is added again after it finished, or retried.
   */
  attempts: number;
  /**
   * Finished jobs only: how the job ended. A job finished by `finish` (or
   * by a version of jobtree before outcomes) `succeeded`.
   */
  outcome?: JobOutcome;
  /** Finished jobs that `complete` gave a result: that result, kept apart from the job's data. */
  result?: JsonValue;
  /** Failed jobs only: the error `fail` gave. */
  error?: JobError;
  /** `getJob` only: the job's own retry policy (see {@link AddOptions.retry}), when it has one. */
  retry?: JobRetryPolicy;
  /** `getJob` only: the trace context its add carried (see {@link AddOptions.traceContext}), when it has one. */
  traceContext?: TraceContext;
  /** The job's group (see {@link AddOptions.group}), when it has one. */
  group?: string;
  /** `getJob` only: `true` when the job is a parent or a child in a flow (see `addFlow`, `getFlow`). */
  inFlow?: true;
}

/** Why a job failed, as the store keeps it (see `fail`). */
export interface JobError {
  message: string;
  /** The error's class name. */
  name: string;
  /** What the worker recorded about the job's runs (a scheduler's history), when it gave one. */
  history?: JsonValue[];
}

/**
 * What `fail` takes: an `Error` (its message and name are kept), or the
 * parts of a {@link JobError}, whose `name` defaults to `'Error'` and whose
 * `history` must be JSON.
 */
export type JobErrorInput = Error | { message: string; name?: string; history?: readonly unknown[] };

/** One job of `completeMany`: a handle from `accept` and, optionally, its run's result. */
export interface CompleteItem<T extends string = string> {
  job: Job<T>;
  /** The run's result, kept apart from the job's data. @default none */
  result?: unknown;
}

/** One job of `failMany`: a handle from `accept` and why it failed. */
export interface FailItem<T extends string = string> {
  job: Job<T>;
  error: JobErrorInput;
}

export interface FailAttemptOptions {
  /** When the job may run again: epoch seconds, or a `Date`. */
  scheduledTime: number | Date;
  /**
   * The failed attempts the job has now (a worker that counts its own
   * streaks sets it: a long healthy run may start a new count).
   * @default one more than the job had
   */
  attempts?: number;
}

/** Which jobs `getJobs` and `foldJobs` visit. */
export interface JobsFilter {
  /**
   * Only finished jobs that ended so. `failed` and `cancelled` are read from
   * their own rows (not by a scan of every job); `succeeded` from the job
   * records' headers, without parsing the others' data.
   * @default every job
   */
  outcome?: JobOutcome;
}

export interface AddOptions {
  /**
   * Epoch seconds (fractions allowed), or a `Date`, before which the job is
   * not accepted. Milliseconds are refused (`invalid_scheduled_time`): a
   * number after `MAX_SCHEDULED_TIME` (1e11, the year 5138) can only be
   * milliseconds. When omitted, a new (or finished, re-enqueued) job is due
   * now and an existing pending or running job keeps its scheduled time.
   * @default now (whole seconds)
   * @example { scheduledTime: Date.now() / 1000 + 60 } // in a minute
   */
  scheduledTime?: number | Date;
  /**
   * An integer >= 0; higher runs first. When omitted, an existing job keeps
   * its priority.
   * @default 0
   */
  priority?: number;
  /**
   * A continuous job runs until it is stopped (a replication, a stream
   * follower) and a scheduler may rotate it out to give its slot to another
   * job; a one-shot job (`false`) runs to completion. Stored with the job;
   * when omitted, an existing job keeps its flag.
   * @default false
   */
  continuous?: boolean;
  /**
   * The job's own retry policy, stored with it (a row apart from its data)
   * so that whichever process runs it, after any restart, applies it: each
   * field given overrides its processor's option of that name. `backoff` is
   * a schedule (a function cannot be stored). When omitted, an existing job
   * keeps its policy.
   * @example { retry: { attempts: 10, backoff: { type: 'fixed', delayMs: 5_000 }, maxRunMs: 60_000 } }
   */
  retry?: JobRetryPolicy;
  /**
   * A trace context the job carries to its runs (`Job.traceContext`),
   * stored in a row apart from its data: up to 16 strings, at most 4 KiB as
   * JSON. The app's `add` fills it from its OpenTelemetry span when a
   * tracer records; given by hand it is kept as it is. A new one replaces
   * the job's; when omitted, a pending or running job keeps its own and a
   * finished job added again drops it (its next run is another trace's).
   * @example { traceContext: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } }
   */
  traceContext?: TraceContext;
  /**
   * The group the job belongs to (a tenant, a customer): a non-empty string
   * of at most 256 UTF-8 bytes, stored with the job. The type's group limits
   * (`setTypeLimits(type, { group: { concurrency, rate } })`) hold for each
   * group on its own, and groups take turns: a group's backlog never keeps
   * another group's job waiting for more than one turn of every group with
   * jobs waiting. A new job (or a finished one added again) takes it, a
   * pending job moves to it; a running job keeps its group until its run
   * ends. When omitted, an existing job keeps its group.
   * @example { group: 'tenant-42' }
   */
  group?: string;
}

/** One job of `addMany`: its id, and `add`'s data and options. */
export interface JobSpec<T extends string = string> extends AddOptions {
  id: string;
  /** @default null */
  data?: JobInputOf<T>;
}

/** One job of `updateMany`/`finishMany`: a handle from `accept` and, optionally, new data. */
export interface WorkerItem<T extends string = string> {
  job: Job<T>;
  /** Replaces the job's data when given. */
  data?: JobInputOf<T>;
}

/**
 * The outcome of one item of a batch call, shaped like `Promise.allSettled`'s:
 * each item succeeds or fails on its own (a stale job gets its own `halt`).
 */
export type Settled<T> = { status: 'fulfilled'; value: T } | { status: 'rejected'; reason: Error };

/** One entry of `getJobStates`. */
export interface JobStateEntry {
  id: string;
  /** `undefined` when the job does not exist. */
  state: JobState | undefined;
  /** The job's data, `undefined` when the job does not exist. */
  data: JsonValue | undefined;
}

export interface ResubmitOptions extends AddOptions {
  /**
   * New job data. Applied to pending and finished jobs; a running job's data
   * belongs to its worker and is left unchanged.
   * @default the job's current data
   */
  data?: unknown;
}

export interface WorkerResubmitOptions {
  /** When the resubmitted run is due: epoch seconds, or a `Date`. @default the job's scheduled time */
  scheduledTime?: number | Date;
  /** @default the job's priority */
  priority?: number;
}

export interface AcceptOptions {
  /**
   * Milliseconds to wait for a job when none is due. The wait is on the
   * type's `watches_pending` key (woken by any enqueue) and on the earliest
   * future scheduled time; never a polling loop. `Infinity` waits for ever.
   * @default 0 (return `undefined` at once)
   */
  timeout?: number;
  /**
   * Only jobs scheduled at or before this time (epoch seconds) qualify.
   * @default now
   */
  maxSchedTime?: number;
  /**
   * The type does not use scheduled times: any pending job qualifies
   * whatever its scheduled time, and workers pick randomly among all jobs of
   * the best priority (the least contention). Cannot be combined with
   * `maxSchedTime`.
   * @default false
   */
  noSchedule?: boolean;
  /**
   * Ends a waiting accept early: once aborted, the accept resolves with no
   * job (`undefined`, or `[]` for `acceptMany`) instead of waiting on. A
   * transaction already taking jobs when the signal fires still delivers
   * them: they are committed as running, and dropping them would leave them
   * without a worker until the activity timeout.
   */
  signal?: AbortSignal;
}

export interface PendingCountOptions {
  /** Count only jobs scheduled at or before this time (epoch seconds). @default no bound */
  maxSchedTime?: number;
  /** Stop counting at this many. @default Infinity */
  limit?: number;
}

export interface ReEnqueueOptions {
  /** Rows per transaction to start with; it then adapts. @default adaptive, starting at 100 */
  batchSize?: number;
}

/** How a process takes part in an embedded store that several processes of one machine use. */
export interface SharingOptions {
  /**
   * `auto`: own the store when no other process does (and serve the
   * others), be a client of its owner otherwise, and take the store over
   * when the owner goes. `owner`: own it, or fail with DatabaseLockedError.
   * `client`: only ever connect to an owner.
   * @default 'auto'
   */
  role?: 'auto' | 'owner' | 'client';
  /**
   * How long a client waits for an owner to serve the store (one still
   * starting, or a successor taking over) before its calls fail with
   * `owner_lost`.
   * @default 10000
   */
  ownerWaitMs?: number;
}

export type OpenJobsOptions = (
  | (EmbeddedOptions & SharingOptions)
  | FoundationDbOptions
  | {
      /** An open database to share; `close()` then leaves it open. */
      database: Database;
    }
) & {
  /**
   * The clock rate limits count on, in the process that runs the store's
   * transactions (a client's takes run in the owner, on the owner's clock).
   * @default the system clock
   */
  clock?: JobsClock;
};
