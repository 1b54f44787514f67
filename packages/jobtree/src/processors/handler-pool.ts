// One processor's share of the handler threads (handler-threads.ts): the
// scheduler of one job type starts, aborts and ends its runs through it, and
// hears of their ends alone. In an app every type's share is of the app's
// one pool; a scheduler started on its own has threads of its own, which
// it closes when it stops.

import type { Worker } from 'node:worker_threads';
import type { HandlerPoolEvents, HandlerRunner } from './handler-runner.js';
import { HandlerThreads, ONE_LANE_BATCH_MS, type Share } from './handler-threads.js';
import type { AbortCause } from './interfaces.js';
import type { LaneRun } from './lane-protocol.js';

export { ONE_LANE_BATCH_MS };
export type { HandlerPoolEvents };

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

  /** Runs travel to the lanes: their handlers are called there, later. */
  readonly callsHandlersInStart = false;

  start(runs: readonly LaneRun[]): void {
    this.#threads.start(this.#share, runs);
  }

  aheadRoom(): number {
    return this.#threads.aheadRoom(this.#share);
  }

  runAhead(runs: readonly LaneRun[]): void {
    this.#threads.runAhead(this.#share, runs);
  }

  recall(): void {
    this.#threads.recall(this.#share);
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
