// The messages between the handler threads and a lane: one long piscina
// task per worker thread that runs many handlers at once, of any job type
// (each handler module loaded once per thread, on first use). Jobs, results and
// progress travel in batches over the task's own MessagePort (jobs and
// results as flat arrays of plain values, see PackedRuns); the lane's
// liveness and the job it is executing are published in a small shared
// buffer (see lane-status.ts) that the main thread can read even while the
// lane's thread is stuck.

import { inspect } from 'node:util';
import type { MessagePort } from 'node:worker_threads';
import type { Span } from '@opentelemetry/api';
import type { FlowChild, JsonValue } from '@jobtree/core';
import type { AbortCause, HandlerJob } from './interfaces.js';

/** The piscina task of one lane. */
export interface LaneTask {
  port: MessagePort;
  status: SharedArrayBuffer;
  /**
   * tsx's register API, when the lane's own code is JavaScript but a handler
   * module may be TypeScript: the lane registers tsx before it loads the
   * first such module, and only then (a JavaScript handler's thread carries
   * no loader).
   */
  tsxApi: string | undefined;
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
  /** The run's span, when a tracer records it: in-process handlers run inside it (it does not cross to threads). */
  readonly span?: Span | undefined;
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
  /** Load a handler module (answered `loaded` or `broken`); a lane loads each URL once. */
  | { kind: 'load'; url: string }
  /**
   * Start runs of the handler at `url` (asked to load first), jobs of `type`, for the processor `share`;
   * queue the `ahead` runs, each to start when a run of the processor on the lane ends (see lane-queue.ts).
   */
  | { kind: 'start'; url: string; type: string; share: number; runs: PackedRuns; ahead?: PackedRuns }
  /** Abort running handlers' signals; a queued run is dropped unstarted (reported `returned`). */
  | { kind: 'abort'; serials: number[]; cause: AbortCause }
  /** Drop these runs unstarted if they are still queued (reported `returned`); a started one runs on. */
  | { kind: 'recall'; serials: number[] }
  /** The answer to a `ctx.update`: `error` set when the job is no longer the processor's. */
  | { kind: 'updated'; request: number; error?: SerializedError & { code: string } }
  /** The answer to a `ctx.childResults()`: the children, or why they could not be read. */
  | { kind: 'children'; request: number; children?: FlowChild[]; error?: SerializedError & { code: string } }
  /** End the task once no handler runs. */
  | { kind: 'close' };

/**
 * A processor's busy spells on a lane, SPELL_FIELDS values each: the
 * processor's share number, how long the lane had runs of it (ms, from its
 * first run after it last had none), how many of them ended in that time,
 * and 1 when the spell ended in the turn of the lane's event loop it began
 * in (else 0): its runs never waited for anything outside the thread.
 */
export type PackedSpells = number[];
export const SPELL_FIELDS = 4;

export type FromLane =
  /** The lane runs and ticks from now on. */
  | { kind: 'ready'; threadId: number }
  /** A handler module loaded. */
  | { kind: 'loaded'; url: string }
  /** A handler module did not load: every run of it sent to this lane is answered with this error. */
  | { kind: 'broken'; url: string; error: SerializedError }
  /**
   * Runs that ended, and the busy spells that ended with them; queued runs that started
   * (before any result of theirs) and queued runs dropped unstarted.
   */
  | { kind: 'settled'; results: PackedResults; spells?: PackedSpells; started?: number[]; returned?: number[] }
  | { kind: 'update'; request: number; serial: number; data: JsonValue }
  /** A handler called `ctx.childResults()`. */
  | { kind: 'readChildren'; request: number; serial: number };

export function serializeError(error: unknown): SerializedError {
  // Never throws: its callers settle a run with what it returns, and a throw
  // here would leave the run unsettled, its job running until its timeout.
  try {
    if (error instanceof Error) {
      // As strings: a name or message of another kind (a Symbol, an object
      // with methods) may not cross to the main thread, and the lane would die of it.
      const serialized: SerializedError = { name: String(error.name), message: String(error.message) };
      if (typeof error.stack === 'string') serialized.stack = error.stack;
      if ((error as { retryable?: unknown }).retryable === false) serialized.retryable = false;
      return serialized;
    }
    return { name: 'Error', message: typeof error === 'string' ? error : thrownText(error) };
  } catch {
    // A Proxy whose traps throw (`instanceof` asks its prototype), an Error whose own getters throw.
    return { name: 'Error', message: thrownText(error) };
  }
}

/**
 * A thrown value that is no Error, as text a reader can use. JSON loses a
 * circular object (its `String` is `[object Object]`), a Map or a class's
 * name; util.inspect shows them all. Its bounds (depth, array and string
 * lengths) keep most huge values' text small before the message is cut to
 * its stored length; inspect has none for an object's own keys, so one with
 * very many is shown whole first.
 */
function thrownText(value: unknown): string {
  try {
    return inspect(value, { depth: 3, maxArrayLength: 20, maxStringLength: 1_000, breakLength: Number.POSITIVE_INFINITY });
  } catch {
    // An inspect hook of the value's own threw, or an Error's own getters.
    try {
      return String(value);
    } catch {
      return `a thrown ${typeof value} that cannot be shown`;
    }
  }
}
