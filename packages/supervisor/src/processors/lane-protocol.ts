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
  /** The held job itself, not a copy: only the fields a handler sees travel (see packLaneJob). */
  job: Pick<HandlerJob<JsonValue>, 'id' | 'data' | 'priority' | 'scheduledTime'> & { readonly continuous?: boolean };
  attempt: number;
}

/**
 * Jobs travel to a lane as one flat array, LANE_JOB_FIELDS entries per job
 * (serial, id, data, priority, scheduledTime, attempt, continuous), and the
 * job type once per message: a structured clone writes every object's
 * property names again, so objects per job cost the main thread more to send
 * than the values they carry.
 */
export type PackedJobs = unknown[];
export const LANE_JOB_FIELDS = 7;

export function packLaneJob(into: PackedJobs, { serial, job, attempt }: LaneJob): void {
  into.push(serial, job.id, job.data, job.priority, job.scheduledTime, attempt, job.continuous === true);
}

/** The `index`th job of a packed array, as its handler sees it. */
export function unpackLaneJob(type: string, packed: PackedJobs, index: number): { serial: number; job: HandlerJob<JsonValue> } {
  const at = index * LANE_JOB_FIELDS;
  return {
    serial: packed[at] as number,
    job: {
      type,
      id: packed[at + 1] as string,
      data: packed[at + 2] as JsonValue,
      priority: packed[at + 3] as number,
      scheduledTime: packed[at + 4] as number,
      attempt: packed[at + 5] as number,
      continuous: packed[at + 6] as boolean,
    },
  };
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

export type LaneResult = { serial: number; ok: true; value: unknown } | { serial: number; ok: false; error: SerializedError };

/**
 * Results travel back flat too, three entries per event, in the order they
 * happened: serial, then `true` and the handler's value (it resolved),
 * `false` and a SerializedError (it rejected), or `null` and nothing (a
 * queued job started, in the slot of the run whose result comes just
 * before it).
 */
export type PackedResults = unknown[];
export const LANE_RESULT_FIELDS = 3;

export type ToLane =
  /**
   * `jobs` start now. `queue` waits in the lane: each queued job starts when
   * one of the lane's running handlers ends by itself (not by an abort), in
   * that handler's slot, so the lane never runs more handlers than it was
   * given, and without waiting for the main thread. When no handler runs
   * that could hand a slot on, the queue goes back unstarted (`dropped`), as
   * does a queued job whose abort arrives.
   */
  | { kind: 'start'; type: string; jobs: PackedJobs; queue: PackedJobs }
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
  /** Runs that ended and queued jobs that started (`results`), and queued jobs dropped unstarted (`dropped`). */
  | { kind: 'settled'; results: PackedResults; dropped: number[] }
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
