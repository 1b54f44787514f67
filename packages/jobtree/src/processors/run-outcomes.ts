// What happens when a run ends (the replication job supervisor's part of
// couch_replicator_scheduler): a handler that resolves finishes its job
// with its result; one that crashes has its job retried after a backoff,
// through the job's scheduled time, until it is out of attempts and is
// given up with a FailedOutcome; a run stopped by rotation or shutdown
// gives its job back to the queue; a lost thread restarts the bystanders
// of a named culprit at once. The decisions are the ScheduleTable's.

import { type Job, JobsError, type Jobs, type LocalQueue } from '@jobtree/core';
import type { EventEmitter } from 'eventemitter3';
import { isFailedOutcome } from './failed-outcome.js';
import type { Held, HeldJobs } from './held-jobs.js';
import type { HistoryEvent } from './history.js';
import type { FailedOutcome, SchedulerEventTypes } from './interfaces.js';
import { historyJson } from './job-summary.js';
import type { SerializedError } from './lane-protocol.js';
import type { SchedulerSettings } from './processor-options.js';
import type { ScheduleTable } from './schedule-table.js';

/** A job that was on this many threads in a row lost with no culprit named counts as their cause. */
const MAX_UNEXPLAINED_LOSSES = 3;

/** What run outcomes need of their scheduler. */
export interface RunOutcomesContext {
  readonly jobs: Jobs;
  readonly settings: SchedulerSettings;
  readonly table: ScheduleTable;
  readonly held: HeldJobs;
  readonly queue: LocalQueue;
  readonly events: EventEmitter<SchedulerEventTypes>;
  /** Whether the scheduler runs (it is not stopping). */
  active(): boolean;
  /** Starts held jobs into free slots now. */
  startDue(): void;
  /** Fills free slots soon: starts held jobs and takes from the local queue, once per turn. */
  requestPump(): void;
  /** A run is over: a stop waiting for the handlers to end looks again. */
  runOver(): void;
  emitError(error: unknown): void;
}

export class RunOutcomes {
  readonly #context: RunOutcomesContext;
  /** Store writes in the background (finishes, resubmits): a stop waits for them. */
  readonly #writes = new Set<Promise<void>>();
  /** Finishes waiting for this turn's finishMany: the calls' items, and the held jobs they finish (same order). */
  #finishItems: { job: Job; data: unknown }[] = [];
  #finishHelds: Held[] = [];
  #finishScheduled = false;

  constructor(context: RunOutcomesContext) {
    this.#context = context;
  }

  /** Writes still in flight. */
  get pendingWrites(): number {
    return this.#writes.size;
  }

  /** A handler ended: resolved (`ok`, with its result) or threw (`outcome` is the error). */
  settled(serial: number, ok: boolean, outcome: unknown): void {
    const held = this.#context.held.endRun(serial);
    if (held === undefined) return;
    held.losses = 0;
    this.#afterRun(held, ok, ok ? outcome : describeError(outcome as SerializedError));
  }

  /**
   * A run's thread is gone. The culprit's run crashed; a bystander of a named
   * culprit runs again at once with nothing counted against it. With no
   * culprit named, the loss counts, and a job on MAX_UNEXPLAINED_LOSSES such
   * threads in a row is taken for their cause.
   */
  lost(serial: number, culprit: number | undefined, reason: string): void {
    const context = this.#context;
    // Looked up first: the pool reports the culprit's own loss after its bystanders'.
    const cause = culprit === undefined || culprit === serial ? undefined : context.held.bySerial(culprit)?.job.id;
    const held = context.held.endRun(serial);
    if (held === undefined) return;
    if (culprit === undefined) held.losses++;
    if (held.abort !== undefined || culprit === serial || held.losses >= MAX_UNEXPLAINED_LOSSES) {
      this.#afterRun(held, false, reason);
      return;
    }
    const blame =
      culprit === undefined ? 'no culprit named' : cause === undefined ? 'taken down by code an ended run left behind' : `taken down by job ${JSON.stringify(cause)}`;
    const now = context.settings.clock.now();
    if (context.table.get(held.job.id)?.running) context.table.lose(held.job.id, now, `thread lost (${blame}): ${reason}`);
    context.events.emit('job:stopped', { id: held.job.id, cause: 'thread_lost' });
    if (context.active()) {
      context.startDue();
      context.requestPump();
    } else {
      this.giveBack(held);
    }
    context.runOver();
  }

  /** The job goes back to the queue, due now, with its last progress. */
  giveBack(held: Held): void {
    const { table, settings } = this.#context;
    const { id } = held.job;
    this.#context.held.detach(held);
    this.#context.held.delete(id);
    const now = settings.clock.now();
    if (table.get(id)?.running) table.stop(id, now);
    table.release(id);
    this.#track(this.#resubmit(held.job, now / 1000));
  }

  /** Sends the finishes of this turn now (a stop does, rather than wait for the turn to end). */
  flushFinishes(): void {
    this.#finishScheduled = false;
    const items = this.#finishItems;
    const helds = this.#finishHelds;
    if (items.length === 0) return;
    this.#finishItems = [];
    this.#finishHelds = [];
    const { jobs, events } = this.#context;
    this.#track(
      jobs.finishMany(items).then((outcomes) => {
        const announce = events.listenerCount('job:finished') > 0;
        for (let index = 0; index < outcomes.length; index++) {
          const outcome = outcomes[index] as (typeof outcomes)[number];
          const held = helds[index] as Held;
          if (outcome.status === 'fulfilled') {
            if (announce) events.emit('job:finished', { id: held.job.id, state: outcome.value });
          } else if (JobsError.is(outcome.reason, 'halt')) events.emit('job:cancelled', { id: held.job.id });
          else if (JobsError.is(outcome.reason, 'invalid_job_data') && !isFailedOutcome(items[index]?.data)) {
            // A result the store cannot keep is the handler's fault: the job fails with that error.
            this.#track(this.#finishFailed(held, `the handler's result is not storable: ${outcome.reason.message}`, 1, []));
          } else this.#context.emitError(outcome.reason);
        }
      }),
    );
  }

  /** Resolves once every write made so far, and those they lead to, has settled. */
  async settle(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  /** A run ended: `ok` with the handler's result as `outcome`, or crashed with `outcome` the reason. */
  #afterRun(held: Held, ok: boolean, outcome: unknown): void {
    const context = this.#context;
    // The pump starts due jobs first: once for all the runs one lane message
    // ends, and queued before their finishMany, so the lanes get new jobs
    // before the main thread turns to the store.
    context.requestPump();
    const { id } = held.job;
    switch (held.abort) {
      case 'cancel':
        break; // already dropped
      case 'rotation':
        this.giveBack(held);
        context.events.emit('job:stopped', { id, cause: 'rotation' });
        break;
      case 'shutdown':
        if (ok && !held.job.continuous) this.#finish(held, outcome);
        else {
          this.giveBack(held);
          context.events.emit('job:stopped', { id, cause: 'shutdown' });
        }
        break;
      default:
        // The local queue keeps spare jobs while runs end quickly.
        context.queue.ended();
        if (ok) this.#finish(held, outcome);
        else this.#crash(held, outcome as string);
    }
    context.runOver();
  }

  #finish(held: Held, data: unknown): void {
    this.#context.held.delete(held.job.id);
    this.#context.table.remove(held.job.id);
    // Finishes of the runs that end in one event-loop turn (every lane's
    // messages of that turn) go to the store in one finishMany: fewer, larger
    // calls cost the main thread less than one per message, and the lanes
    // already have their next jobs (the pump runs first, see #afterRun).
    this.#finishItems.push({ job: held.job, data });
    this.#finishHelds.push(held);
    if (!this.#finishScheduled) {
      this.#finishScheduled = true;
      setImmediate(() => this.flushFinishes());
    }
  }

  #crash(held: Held, reason: string): void {
    const { table, settings, events } = this.#context;
    const { job } = held;
    const now = settings.clock.now();
    this.#context.held.delete(job.id);
    const attempts = job.continuous ? settings.attempts.continuous : settings.attempts.oneShot;
    const { outcome, backoffMs, entry } = table.crash(job.id, reason, now, attempts);
    if (outcome === 'failed') {
      events.emit('job:failed', { id: job.id, error: reason, attempts: entry.failures });
      this.#track(this.#finishFailed(held, reason, entry.failures, entry.history));
      return;
    }
    table.release(job.id);
    events.emit('job:crashed', { id: job.id, error: reason, attempt: entry.failures, retryAt: now + backoffMs });
    this.#track(this.#resubmit(job, (now + backoffMs) / 1000));
  }

  async #finishFailed(held: Held, reason: string, attempts: number, history: readonly HistoryEvent[]): Promise<void> {
    const failed: FailedOutcome = { outcome: 'failed', error: reason, attempts, data: held.job.data, history: historyJson(history) };
    try {
      await this.#context.jobs.finish(held.job, failed);
    } catch (error) {
      if (!JobsError.is(error, 'halt')) throw error;
    }
  }

  async #resubmit(job: Job, scheduledTime: number): Promise<void> {
    try {
      const flagged = await this.#context.jobs.resubmit(job, { scheduledTime });
      await this.#context.jobs.finish(flagged);
    } catch (error) {
      if (!JobsError.is(error, 'halt')) throw error;
    }
  }

  #track(write: Promise<void>): void {
    const tracked = write.catch((error: unknown) => this.#context.emitError(error)).finally(() => this.#writes.delete(tracked));
    this.#writes.add(tracked);
  }
}

function describeError(error: SerializedError): string {
  return error.name && error.name !== 'Error' ? `${error.name}: ${error.message}` : error.message;
}
