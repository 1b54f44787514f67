// The messages between the scheduler and a handler lane: one long piscina
// task per worker thread that runs many handlers at once. Jobs, results and
// progress travel in batches over the task's own MessagePort; the lane's
// liveness and the job it is executing are published in a small shared
// buffer (see lane-status.ts) that the main thread can read even while the
// lane's thread is stuck.

import type { MessagePort } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import type { AbortCause, HandlerJob } from './interfaces.js';

/** The piscina task of one lane. */
export interface LaneTask {
  handlerUrl: string;
  port: MessagePort;
  status: SharedArrayBuffer;
}

/** A job handed to a lane; `serial` names this run of it (a job run twice gets two serials). */
export interface LaneJob {
  serial: number;
  job: HandlerJob<JsonValue>;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

export type LaneResult = { serial: number; ok: true; value: unknown } | { serial: number; ok: false; error: SerializedError };

export type ToLane =
  | { kind: 'start'; jobs: LaneJob[] }
  | { kind: 'abort'; serials: number[]; cause: AbortCause }
  /** The answer to a `ctx.update`: `error` set when the job is no longer the processor's. */
  | { kind: 'updated'; request: number; error?: SerializedError & { code: string } }
  /** End the task once no handler runs. */
  | { kind: 'close' };

export type FromLane =
  /** The handler module loaded; the lane ticks from now on. */
  | { kind: 'ready'; threadId: number }
  /** The handler module did not load: every job sent to this lane is answered with this error. */
  | { kind: 'broken'; error: SerializedError }
  | { kind: 'settled'; results: LaneResult[] }
  | { kind: 'update'; request: number; serial: number; data: JsonValue };

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const serialized: SerializedError = { name: error.name, message: error.message };
    if (error.stack !== undefined) serialized.stack = error.stack;
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
