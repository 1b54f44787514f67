// The messages between the scheduler and a handler lane: one long piscina
// task per worker thread that runs many handlers at once. Jobs, results and
// progress travel in batches over the task's own MessagePort (jobs and
// results as flat arrays of plain values, see PackedRuns); the lane's
// liveness and the job it is executing are published in a small shared
// buffer (see lane-status.ts) that the main thread can read even while the
// lane's thread is stuck.

import type { MessagePort } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import type { AbortCause, HandlerJob } from './interfaces.js';

/** The piscina task of one lane. */
export interface LaneTask {
  handlerUrl: string;
  /** The job type every job of this lane has (sent once, not with each job). */
  jobType: string;
  port: MessagePort;
  status: SharedArrayBuffer;
}

/**
 * A run for a lane to start: `serial` names this run of the job (a job run
 * twice gets two serials). The scheduler's own record of a held job fits
 * as it is, so starting a run allocates nothing for the message.
 */
export interface LaneRun {
  readonly serial: number;
  readonly attempt: number;
  readonly job: {
    readonly id: string;
    readonly data: unknown;
    readonly priority: number;
    readonly scheduledTime: number;
    readonly continuous?: boolean;
  };
}

/**
 * Runs travel to a lane flat, RUN_FIELDS values per run in this order:
 * serial, id, data, attempt, priority, scheduledTime, continuous. One array
 * of plain values clones much faster than an object per job with its keys
 * (the main thread pays for the clone, and it is the busy side).
 */
export type PackedRuns = unknown[];
export const RUN_FIELDS = 7;

export function packRun(into: PackedRuns, run: LaneRun): void {
  const { job } = run;
  into.push(run.serial, job.id, job.data, run.attempt, job.priority, job.scheduledTime, job.continuous === true);
}

export type HandlerJobOf = HandlerJob<JsonValue>;

/** Calls `each` with every run of a packed batch, as the handler sees its job. */
export function unpackRuns(packed: PackedRuns, type: string, each: (serial: number, job: HandlerJobOf) => void): void {
  for (let i = 0; i + RUN_FIELDS <= packed.length; i += RUN_FIELDS) {
    each(packed[i] as number, {
      type,
      id: packed[i + 1] as string,
      data: packed[i + 2] as JsonValue,
      attempt: packed[i + 3] as number,
      priority: packed[i + 4] as number,
      scheduledTime: packed[i + 5] as number,
      continuous: packed[i + 6] as boolean,
    });
  }
}

/**
 * Results travel back flat too, RESULT_FIELDS values per ended run:
 * serial, ok, and the handler's result when ok, else its SerializedError.
 */
export type PackedResults = unknown[];
export const RESULT_FIELDS = 3;

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** `false` when the error says its job is not worth another attempt (a NonRetryableError). */
  retryable?: false;
}

export type ToLane =
  | { kind: 'start'; runs: PackedRuns }
  | { kind: 'abort'; serials: number[]; cause: AbortCause }
  /** The answer to a `ctx.update`: `error` set when the job is no longer the processor's. */
  | { kind: 'updated'; request: number; error?: SerializedError & { code: string } }
  /** End the task once no handler runs. */
  | { kind: 'close' };

/** A lane's time from its first run to running dry, and the runs that ended in it. */
export interface BusySpell {
  ms: number;
  runs: number;
}

export type FromLane =
  /** The handler module loaded; the lane ticks from now on. */
  | { kind: 'ready'; threadId: number }
  /** The handler module did not load: every job sent to this lane is answered with this error. */
  | { kind: 'broken'; error: SerializedError }
  /**
   * Runs that ended. `spell`, when the lane ran out of runs with these: how
   * long it had been busy (ms, from its first run after it last ran dry)
   * and how many runs ended in that time.
   */
  | { kind: 'settled'; results: PackedResults; spell?: BusySpell }
  | { kind: 'update'; request: number; serial: number; data: JsonValue };

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const serialized: SerializedError = { name: error.name, message: error.message };
    if (error.stack !== undefined) serialized.stack = error.stack;
    if ((error as { retryable?: unknown }).retryable === false) serialized.retryable = false;
    return serialized;
  }
  return { name: 'Error', message: typeof error === 'string' ? error : safeString(error) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
