// Runs queued ahead in the handler threads (see lane-queue.ts), as the
// scheduler sees them: jobs its local queue holds spare, beyond the free
// slots, are given a run and sent to the lanes that run the processor's
// runs, so that a lane starts the next job the moment one ends instead of
// waiting for a round trip through the main thread. A queued run is a held
// job (heartbeats and the cancellation watch keep it) that is not in the
// schedule table until its lane starts it: only then does it take a slot,
// in place of the run that ended, with its `job:started`, its span and its
// time limit. One that comes back unstarted (aborted first, or its thread
// died) never ran: a stopping scheduler gives its job back, an active one
// holds it for its next free slot. Only one-shot jobs new to the table go
// ahead, and only while no held job waits for a slot: a job that waits
// (a retry due, one rotated in) is not overtaken.

import type { LocalQueue } from '@jobtree/core';
import { ONE_LANE_BATCH_MS } from './handler-threads.js';
import type { HandlerRunner } from './handler-runner.js';
import type { Held, HeldJobs } from './held-jobs.js';
import type { LaneRun } from './lane-protocol.js';
import type { SchedulerSettings } from './processor-options.js';
import type { ScheduleTable } from './schedule-table.js';

/**
 * How long a slot stays free, with no job held for it, before the runs
 * queued in the lanes are asked back for it. Queued runs start within about
 * this long anyway (a lane holds what it runs through in
 * ONE_LANE_BATCH_MS); asked back at once, they would cost a round trip
 * each time one lane runs dry a little before another.
 */
const RECALL_AFTER_MS = ONE_LANE_BATCH_MS;

/** What runs ahead need of their scheduler. */
export interface RunsAheadContext {
  readonly settings: SchedulerSettings;
  readonly table: ScheduleTable;
  readonly held: HeldJobs;
  readonly queue: LocalQueue;
  readonly pool: () => HandlerRunner;
  /** Whether the scheduler runs (it is not stopping). */
  active(): boolean;
  /** A run begins: its span, its time limit and its `job:started`. */
  begin(held: Held): void;
  /** The job goes back to the store's queue. */
  giveBack(held: Held): void;
  /** Fills free slots soon. */
  requestPump(): void;
  /** A run is over: a stop waiting for the handlers to end looks again. */
  runOver(): void;
}

export class RunsAhead {
  readonly #context: RunsAheadContext;
  /** Runs queued in the lanes now. */
  #queued = 0;
  #recallTimer: NodeJS.Timeout | undefined;

  constructor(context: RunsAheadContext) {
    this.#context = context;
  }

  /**
   * Queues as many of the local queue's spare jobs as the lanes take now.
   * A slot left free, with no job held for it, while runs wait queued in a
   * lane (behind a run that lasts, or a lane that ran dry first) asks them
   * back after RECALL_AFTER_MS, to start in the free slot.
   */
  queue(): void {
    const { queue, table, held } = this.#context;
    if (queue.held === 0) {
      if (this.#recallTimer === undefined && this.#slotWaits()) {
        this.#recallTimer = setTimeout(this.#recall, RECALL_AFTER_MS);
        this.#recallTimer.unref();
      }
      return;
    }
    if (table.pendingCount > 0) return;
    const pool = this.#context.pool();
    const room = Math.min(pool.aheadRoom(), queue.held);
    if (room <= 0) return;
    const now = this.#context.settings.clock.now();
    const runs: LaneRun[] = [];
    for (const job of queue.takeReady(room)) {
      const one = held.hold(job);
      if (one === undefined) continue;
      if (job.continuous === true || table.get(job.id) !== undefined) {
        // Started the usual way, by the table, into a free slot.
        table.add(job.id, job.continuous === true, now, job.attempts);
        continue;
      }
      held.startRun(one, job.attempts + 1);
      one.queued = true;
      runs.push(one as Held & LaneRun);
    }
    this.#queued += runs.length;
    if (runs.length > 0) pool.runAhead(runs);
  }

  /** Whether a slot is free with nothing held for it while runs wait queued in the lanes. */
  #slotWaits(): boolean {
    const { queue, table, settings } = this.#context;
    return this.#queued > 0 && queue.held === 0 && table.pendingCount === 0 && table.runningCount < settings.maxJobs && this.#context.active();
  }

  readonly #recall = (): void => {
    this.#recallTimer = undefined;
    if (this.#slotWaits()) this.#context.pool().recall();
  };

  /** A queued run started in its lane: it takes the slot of the run whose end started it. */
  started(serial: number): void {
    const { held, table, settings } = this.#context;
    const one = held.bySerial(serial);
    if (one === undefined || !one.queued) return;
    one.queued = false;
    this.#queued--;
    // Cancelled meanwhile: its abort is on its way to the lane, and its job is no longer the scheduler's.
    if (held.get(one.job.id) !== one) return;
    const now = settings.clock.now();
    table.add(one.job.id, false, now, one.job.attempts);
    table.start(one.job.id, now);
    this.#context.begin(one);
  }

  /** A queued run came back unstarted. */
  returned(serial: number): void {
    const context = this.#context;
    const one = context.held.bySerial(serial);
    if (one === undefined || !one.queued) return;
    context.held.endRun(serial);
    one.queued = false;
    this.#queued--;
    if (context.held.get(one.job.id) === one) {
      if (one.abort !== undefined || !context.active()) context.giveBack(one);
      else {
        context.table.add(one.job.id, one.job.continuous === true, context.settings.clock.now(), one.job.attempts);
        context.requestPump();
      }
    }
    context.runOver();
  }

  /** Jobs queued in the lanes, not started: they are held, and wait like the local queue's. */
  *queuedJobs(): IterableIterator<Held> {
    for (const one of this.#context.held.values()) if (one.queued) yield one;
  }
}
