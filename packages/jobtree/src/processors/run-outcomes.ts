// What happens when a run ends (the replication job supervisor's part of
// couch_replicator_scheduler): a handler that resolves completes its job,
// its result stored apart from the job's input; one that crashes has its
// job retried after a backoff, through the job's scheduled time, its failed
// attempts counted in the store, until it is out of attempts and is given
// up: the job ends failed with its error and history, its input intact; a
// run stopped by rotation or shutdown gives its job back to the queue; a
// lost thread restarts the bystanders of a named culprit at once. The
// decisions are the ScheduleTable's.

import { type Job, JobsError, type Jobs, type LocalQueue, MAX_SCHEDULED_TIME } from '@jobtree/core';
import type { EventEmitter } from 'eventemitter3';
import { endRunSpan } from '../job-tracing.js';
import type { Held, HeldJobs } from './held-jobs.js';
import type { HistoryEvent } from './history.js';
import type { SchedulerEventTypes } from './interfaces.js';
import { historyJson } from './job-summary.js';
import type { SerializedError } from './lane-protocol.js';
import type { SchedulerSettings } from './processor-options.js';
import { attemptsOf, backoffOf, maxRunMsOf, worthRetrying } from './retry-policy.js';
import type { ScheduleTable } from './schedule-table.js';
import { cutErrorText, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS, storedRunError } from './stored-run-error.js';

/** A job that was on this many threads in a row lost with no culprit named counts as their cause. */
const MAX_UNEXPLAINED_LOSSES = 3;

/**
 * completeMany calls of one scheduler in flight at most; finishes that end
 * meanwhile wait and go together when one settles. Each call is a store
 * transaction of its own, whose fixed cost (conflict checks, the commit)
 * the main thread pays: handlers in threads end a lane's few runs per
 * message, and one call per message made those transactions many and
 * small. Two keep one transaction running its bodies while the other
 * commits.
 */
const FINISHES_IN_FLIGHT = 2;

/** Why a run crashed: its handler's error, or what took its thread. */
interface RunError {
  name: string;
  message: string;
  /** `false`: the handler said another attempt is pointless (a NonRetryableError). */
  retryable?: false;
}

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
  /** Completions waiting for this turn's completeMany: the calls' items, and the held jobs they finish (same order). */
  #finishItems: { job: Job; result: unknown }[] = [];
  #finishHelds: Held[] = [];
  #finishScheduled = false;
  /** completeMany calls sent and not settled. */
  #finishesInFlight = 0;

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
    this.#afterRun(held, ok, ok ? outcome : runError(outcome as SerializedError));
  }

  /**
   * A run's thread is gone. The culprit's run crashed; a bystander of a named
   * culprit runs again at once with nothing counted against it. With no
   * culprit named, the loss counts, and a job on MAX_UNEXPLAINED_LOSSES such
   * threads in a row is taken for their cause.
   */
  lost(serial: number, culprit: number | undefined, thrown: string, culpritJob?: string): void {
    const context = this.#context;
    // A thread that dies of an uncaught error is told with that error's message, as long as a handler's own.
    const reason = cutErrorText(thrown, MAX_ERROR_MESSAGE_CHARS);
    // Looked up first: the pool reports the culprit's own loss after its bystanders'.
    const ownCause = culprit === undefined || culprit === serial ? undefined : context.held.bySerial(culprit)?.job.id;
    // Threads run every type's handlers: the culprit may be another type's job.
    const cause = ownCause === undefined ? culpritJob : `job ${JSON.stringify(ownCause)}`;
    const held = context.held.endRun(serial);
    if (held === undefined) return;
    if (culprit === undefined) held.losses++;
    if (held.abort !== undefined || culprit === serial || held.losses >= MAX_UNEXPLAINED_LOSSES) {
      this.#afterRun(held, false, { name: 'ThreadLost', message: reason });
      return;
    }
    const blame =
      culprit === undefined ? 'no culprit named' : cause === undefined ? 'taken down by code an ended run left behind' : `taken down by ${cause}`;
    const now = context.settings.clock.now();
    if (context.table.get(held.job.id)?.running) context.table.lose(held.job.id, now, `thread lost (${blame}): ${reason}`);
    endRunSpan(held, 'lost', { name: 'ThreadLost', message: `thread lost (${blame}): ${reason}` });
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
    endRunSpan(held, 'stopped');
    this.#context.held.detach(held);
    this.#context.held.delete(id);
    const now = settings.clock.now();
    if (table.get(id)?.running) table.stop(id, now);
    table.release(id);
    this.#track(this.#resubmit(held.job, now / 1000));
  }

  /** Sends the finishes waiting now (a stop does, rather than wait for the turn to end or a call in flight). */
  flushFinishes(): void {
    this.#finishScheduled = false;
    const items = this.#finishItems;
    const helds = this.#finishHelds;
    if (items.length === 0) return;
    this.#finishItems = [];
    this.#finishHelds = [];
    const { jobs, events } = this.#context;
    this.#finishesInFlight++;
    this.#track(
      jobs.completeMany(items).then((outcomes) => {
        const announce = events.listenerCount('job:finished') > 0;
        for (let index = 0; index < outcomes.length; index++) {
          const outcome = outcomes[index] as (typeof outcomes)[number];
          const held = helds[index] as Held;
          if (outcome.status === 'fulfilled') {
            if (announce) events.emit('job:finished', { id: held.job.id, state: outcome.value });
          } else if (JobsError.is(outcome.reason, 'halt')) events.emit('job:cancelled', { id: held.job.id });
          else if (JobsError.is(outcome.reason, 'invalid_job_data')) {
            // A result the store cannot keep is the handler's fault: the job fails with that error.
            // The store's refusal quotes the result's keys, which may be as long as the result.
            const refusal = cutErrorText(`the handler's result is not storable: ${outcome.reason.message}`, MAX_ERROR_MESSAGE_CHARS);
            const error = { name: 'TypeError', message: refusal };
            this.#track(this.#giveUp(held, error, [], { id: held.job.id, error: error.message, attempts: held.attempt }));
          } else this.#context.emitError(outcome.reason);
        }
      }).finally(this.#finishesEnded),
    );
  }

  /**
   * A completeMany call settled: the finishes that gathered meanwhile go
   * now, in one call (from here, not a later turn: a stop waiting for the
   * writes sees this one before the last one is gone).
   */
  readonly #finishesEnded = (): void => {
    this.#finishesInFlight--;
    if (this.#finishItems.length > 0 && this.#finishesInFlight < FINISHES_IN_FLIGHT) this.flushFinishes();
  };

  /** The turn's finishes go, unless the calls in flight are as many as may be (they go when one settles). */
  readonly #flushDue = (): void => {
    if (this.#finishScheduled && this.#finishesInFlight < FINISHES_IN_FLIGHT) this.flushFinishes();
  };

  /** Resolves once every write made so far, and those they lead to, has settled. */
  async settle(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  /** A run ended: `ok` with the handler's result as `outcome`, or crashed with `outcome` its RunError. */
  #afterRun(held: Held, ok: boolean, outcome: unknown): void {
    const context = this.#context;
    // The pump starts due jobs first: once for all the runs one lane message
    // ends, and queued before their finishMany, so the lanes get new jobs
    // before the main thread turns to the store.
    context.requestPump();
    const { id } = held.job;
    switch (held.abort) {
      case 'cancel':
        endRunSpan(held, 'cancelled');
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
      case 'timeout':
        // Over its time, the run failed, whatever its handler did after its signal aborted.
        context.queue.ended();
        this.#crash(held, {
          name: 'TimeoutError',
          message: `the run took longer than its maxRunMs (${maxRunMsOf(held.job, context.settings)} ms)`,
        });
        break;
      default:
        // The local queue keeps spare jobs while runs end quickly.
        context.queue.ended();
        if (ok) this.#finish(held, outcome);
        else this.#crash(held, outcome as RunError);
    }
    context.runOver();
  }

  #finish(held: Held, result: unknown): void {
    endRunSpan(held, 'succeeded');
    this.#context.held.delete(held.job.id);
    this.#context.table.remove(held.job.id);
    // Finishes of the runs that end in one event-loop turn (every lane's
    // messages of that turn) go to the store in one completeMany: fewer,
    // larger calls cost the main thread less than one per message, and the
    // lanes already have their next jobs (the pump runs first, see #afterRun).
    // A handler that resolves with nothing (undefined or null) leaves no
    // result: no row of its own in the store for each such job.
    this.#finishItems.push({ job: held.job, result: result === null ? undefined : result });
    this.#finishHelds.push(held);
    if (!this.#finishScheduled && this.#finishesInFlight < FINISHES_IN_FLIGHT) {
      this.#finishScheduled = true;
      setImmediate(this.#flushDue);
    }
  }

  #crash(held: Held, error: RunError): void {
    const { table, settings } = this.#context;
    const { job } = held;
    const now = settings.clock.now();
    const reason = describeError(error);
    this.#context.held.delete(job.id);
    const report = (failure: unknown): void => this.#context.emitError(failure);
    // Attempts 0: given up now, its failed attempt counted like any other.
    const attempts = worthRetrying(error, settings, report) ? attemptsOf(job, settings) : 0;
    // A wait past the store's latest scheduled time ends there: the store refuses a later one, which would leave the job running.
    const longest = Math.max(0, MAX_SCHEDULED_TIME * 1000 - now);
    const { outcome, backoffMs, entry } = table.crash(job.id, reason, now, attempts, (crashes) =>
      Math.min(backoffOf(job, settings, crashes, error, report), longest),
    );
    endRunSpan(held, outcome === 'failed' ? 'failed' : 'retried', error);
    if (outcome === 'failed') {
      this.#track(this.#giveUp(held, error, entry.history, { id: job.id, error: reason, attempts: entry.failures }));
      return;
    }
    table.release(job.id);
    // The count goes to the store with the job: a restart, or another process, carries on from it.
    this.#track(this.#failAttempt(job, { id: job.id, error: reason, attempt: entry.failures, retryAt: now + backoffMs }));
  }

  /**
   * The job ends failed, its input kept: its error, and its history as the
   * scheduler kept it, are stored apart. `failed` is told once the store
   * says so. A job no longer this scheduler's by then (cancelled, removed,
   * or taken back after its heartbeats lapsed, so perhaps pending or
   * running elsewhere) is told `job:cancelled` instead, as a finish is.
   */
  async #giveUp(held: Held, error: RunError, history: readonly HistoryEvent[], failed: SchedulerEventTypes['job:failed'][0]): Promise<void> {
    const { jobs, events } = this.#context;
    try {
      await jobs.fail(held.job, storedRunError(error.name, error.message, historyJson(history)));
    } catch (failure) {
      if (!JobsError.is(failure, 'halt')) throw failure;
      events.emit('job:cancelled', { id: held.job.id });
      return;
    }
    events.emit('job:failed', failed);
  }

  /**
   * The job waits for its next attempt, its failed attempts counted.
   * `crashed` is told once the store says so, as `failed` is: a listener
   * that reads the job sees it pending with its new count and scheduled
   * time. A job no longer this scheduler's by then is told `job:cancelled`.
   */
  async #failAttempt(job: Job, crashed: SchedulerEventTypes['job:crashed'][0]): Promise<void> {
    const { jobs, events } = this.#context;
    try {
      await jobs.failAttempt(job, { scheduledTime: crashed.retryAt / 1000, attempts: crashed.attempt });
    } catch (error) {
      if (!JobsError.is(error, 'halt')) throw error;
      events.emit('job:cancelled', { id: job.id });
      return;
    }
    events.emit('job:crashed', crashed);
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

/** A handler's error as the store keeps it, its name and message cut to their bounds. */
function runError(error: SerializedError): RunError {
  const run: RunError = {
    name: cutErrorText(String(error.name || 'Error'), MAX_ERROR_NAME_CHARS),
    message: cutErrorText(String(error.message), MAX_ERROR_MESSAGE_CHARS),
  };
  if (error.retryable === false) run.retryable = false;
  return run;
}

/** A crash as the scheduler's events and history tell it. */
function describeError(error: RunError): string {
  return error.name && error.name !== 'Error' && error.name !== 'ThreadLost' ? `${error.name}: ${error.message}` : error.message;
}
