// One processor's share of the handler threads (handler-threads.ts): the
// scheduler of one job type starts, aborts and ends its runs through it, and
// hears of their ends alone. In an app every type's share is of the app's
// one pool; a scheduler started on its own has threads of its own, which
// it closes when it stops.

import type { Worker } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import type { HandlerRunner } from './handler-runner.js';
import { HandlerThreads, ONE_LANE_BATCH_MS, type Share } from './handler-threads.js';
import type { AbortCause } from './interfaces.js';
import type { LaneRun, SerializedError } from './lane-protocol.js';

export { ONE_LANE_BATCH_MS };

export interface HandlerPoolEvents {
  /** A handler ended: resolved (`ok`) with its result, or rejected with its error. */
  settled(serial: number, ok: boolean, outcome: unknown): void;
  /** A handler called `ctx.update(data)`; `reply` answers it (with an error when the job is not the processor's any more). */
  update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void;
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
}

export interface HandlerPoolOptions {
  handlerUrl: string;
  /** The type of every job the processor runs. */
  jobType: string;
  /** The most threads its runs spread over (and, without `shared`, the threads it starts). */
  threads: number;
  stuckThreadMs: number;
  events: HandlerPoolEvents;
  /** A batch the lanes run through within this many ms goes to one lane whole. @default ONE_LANE_BATCH_MS */
  oneLaneBatchMs?: number;
  /** The threads it shares with other processors (an app's); without, it starts threads of its own. */
  shared?: HandlerThreads;
}

export class HandlerPool implements HandlerRunner {
  readonly #threads: HandlerThreads;
  readonly #own: boolean;
  readonly #share: Share;
  #closed: Promise<void> | undefined;

  constructor(options: HandlerPoolOptions) {
    this.#own = options.shared === undefined;
    this.#threads = options.shared ?? new HandlerThreads({ threads: options.threads });
    this.#share = this.#threads.join({
      handlerUrl: options.handlerUrl,
      jobType: options.jobType,
      maxLanes: options.threads,
      stuckThreadMs: options.stuckThreadMs,
      oneLaneBatchMs: options.oneLaneBatchMs ?? ONE_LANE_BATCH_MS,
      events: options.events,
    });
  }

  /** The worker threads running handlers (shared with other processors in an app). */
  get threads(): readonly Worker[] {
    return this.#threads.threads;
  }

  threadIdOf(serial: number): number | undefined {
    return this.#threads.threadIdOf(serial);
  }

  isStarted(serial: number): boolean {
    return this.#threads.isStarted(serial);
  }

  start(runs: readonly LaneRun[]): void {
    this.#threads.start(this.#share, runs);
  }

  abort(serials: readonly number[], cause: AbortCause): void {
    this.#threads.abort(serials, cause);
  }

  killThreadOf(serial: number, reason: string): void {
    this.#threads.killThreadOf(serial, reason);
  }

  /**
   * Ends the processor's runs still going (their threads are ended, runs of
   * other processors there lost as bystanders) and leaves the threads; its
   * own threads close.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#threads.leave(this.#share, `the scheduler of ${JSON.stringify(this.#share.jobType)} stopped`);
      if (this.#own) await this.#threads.close();
    })();
    return this.#closed;
  }
}
