// What a scheduler needs from whatever runs its handlers: start runs, abort
// their signals, end a run that ignores its abort, and close. Handler threads
// (handler-pool.ts) are one such runner; every runner reports back through
// HandlerPoolEvents (settled, update, lost).

import type { Worker } from 'node:worker_threads';
import type { FlowChild, JsonValue } from '@jobtree/core';
import type { AbortCause } from './interfaces.js';
import type { LaneRun, SerializedError } from './lane-protocol.js';

export interface HandlerRunner {
  /** The worker threads running handlers (for monitoring and fault injection); none when handlers run on the main thread. */
  readonly threads: readonly Worker[];
  /** The thread id running a job's handler, once it has started. */
  threadIdOf(serial: number): number | undefined;
  /** Whether a job's handler has been called or is about to be (its module is loaded). */
  isStarted(serial: number): boolean;
  /**
   * Whether `start` calls the handlers before it returns, on this thread: a
   * run must then have begun (its span, its time limit, `job:started`)
   * before it is started. A runner that sends runs elsewhere gets them first,
   * and the run begins while they travel.
   */
  readonly callsHandlersInStart: boolean;
  /** Starts runs; each ends with one `settled` or `lost` event. */
  start(runs: readonly LaneRun[]): void;
  /** How many runs `runAhead` would take now (none for a runner that queues no runs). */
  aheadRoom(): number;
  /**
   * Queues runs beyond the slots, each started by the runner when a started
   * run ends (a `started` event), or given back unstarted (a `returned`
   * event) when it is aborted first or its thread dies.
   */
  runAhead(runs: readonly LaneRun[]): void;
  /** Asks for the queued runs back: those not started by then are `returned` (a free slot waits for them). */
  recall(): void;
  /** Aborts the signals of running handlers. */
  abort(serials: readonly number[], cause: AbortCause): void;
  /** Ends a run that ignored its abort signal, that run's fault; it is reported `lost`. */
  killThreadOf(serial: number, reason: string): void;
  /** Ends every run at once; running ones are reported lost. */
  close(): Promise<void>;
}

/** What every runner reports about the runs it was given. */
export interface HandlerPoolEvents {
  /** A queued run (see HandlerRunner.runAhead) started: its handler is being called. */
  started(serial: number): void;
  /** A queued run was given back unstarted: its handler was never called. */
  returned(serial: number): void;
  /** A handler ended: resolved (`ok`) with its result, or rejected with its error. */
  settled(serial: number, ok: boolean, outcome: unknown): void;
  /** A handler called `ctx.update(data)`; `reply` answers it (with an error when the job is not the processor's any more). */
  update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void;
  /** A handler called `ctx.childResults()`; `reply` answers it with its job's children, or an error. */
  childResults(serial: number, reply: (children: FlowChild[] | undefined, error?: SerializedError & { code: string }) => void): void;
  /**
   * A handler's thread is gone, and the run `serial` with it. `culprit` is
   * the run that took the thread down, when one is known: the one whose code
   * the thread was executing when it died or got stuck, or the one the
   * thread was ended for (see killThreadOf). It may be `serial` itself (a
   * crash of that run), another run of the lane (this one is a bystander;
   * the culprit is reported last), or a run that had already ended but left
   * code behind. `undefined`: no job's code was running (the thread was
   * terminated from outside, or died in code no job started).
   * `culpritJob` names the culprit's job when it is another processor's
   * (`job "x" of type "t"`): threads run every type's handlers.
   */
  lost(serial: number, culprit: number | undefined, reason: string, culpritJob?: string): void;
  /** A handler thread exited before it ran a job: the next one starts after `delayMs` (see SchedulerEventTypes `threads:restarting`). */
  threadsRestarting(event: ThreadsRestarting): void;
}

/** Why handler threads start late, and how late. */
export interface ThreadsRestarting {
  reason: string;
  /** Threads that exited before they ran a job, in a row. */
  failures: number;
  /** How long the next thread waits before it starts. */
  delayMs: number;
}
