// Keeps the jobs a scheduler holds alive in the store, and hears when one
// is no longer its own: every `heartbeatMs` one `updateMany` stamps the
// activity of every held job, so the activity monitor never takes a live
// job back; a handler's `ctx.update` records its progress; a `halt` from
// either (the job was removed or taken over) cancels the job here and
// aborts its handler.

import { JobsError, type Jobs, type JsonValue } from '@jobtree/core';
import type { EventEmitter } from 'eventemitter3';
import type { Held, HeldJobs } from './held-jobs.js';
import type { SchedulerEventTypes } from './interfaces.js';
import type { SerializedError } from './lane-protocol.js';
import type { SchedulerSettings } from './processor-options.js';
import type { ScheduleTable } from './schedule-table.js';

/** What heartbeats need of their scheduler. */
export interface HeartbeatsContext {
  readonly jobs: Jobs;
  readonly settings: SchedulerSettings;
  readonly table: ScheduleTable;
  readonly held: HeldJobs;
  readonly events: EventEmitter<SchedulerEventTypes>;
  /** Whether the scheduler runs (it is not stopping). */
  active(): boolean;
  /** Store writes the scheduler still has in flight (heartbeats go on until they settle). */
  pendingWrites(): number;
  /** Fills free slots soon. */
  requestPump(): void;
  /** Aborts a run's handler signal with `cause`, and takes its thread if it ignores it. */
  abortRun(held: Held, cause: 'cancel'): void;
  emitError(error: unknown): void;
}

export class Heartbeats {
  readonly #context: HeartbeatsContext;
  #timer: unknown;
  #beating = false;

  constructor(context: HeartbeatsContext) {
    this.#context = context;
    this.#schedule();
  }

  /** No more heartbeats (the scheduler has stopped and let go of every job). */
  stop(): void {
    this.#context.settings.clock.clearTimeout(this.#timer);
  }

  /** A handler's `ctx.update(data)` in run `serial`: `reply` answers it, with a `halt` when the job is no longer ours. */
  update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void {
    const context = this.#context;
    const held = context.held.bySerial(serial);
    if (held === undefined || held.abort === 'cancel') {
      reply({ name: 'SchedulerError', code: 'halt', message: "the job is no longer this processor's" });
      return;
    }
    context.jobs.update(held.job, data).then(
      (job) => {
        if (context.held.get(job.id) === held) held.job = job;
        reply();
      },
      (error: unknown) => {
        if (JobsError.is(error, 'halt')) {
          reply({ name: 'SchedulerError', code: 'halt', message: error.message });
          if (context.held.get(held.job.id) === held) this.cancel(held);
          return;
        }
        const serialized = error instanceof Error ? error : new Error(String(error));
        reply({ name: serialized.name, code: (error as { code?: unknown }).code === undefined ? 'error' : String((error as { code: unknown }).code), message: serialized.message });
      },
    );
  }

  #schedule(): void {
    const context = this.#context;
    this.#timer = context.settings.clock.setTimeout(() => {
      void this.#beat().finally(() => {
        if (context.active() || context.held.size > 0 || context.pendingWrites() > 0) this.#schedule();
      });
    }, context.settings.heartbeatMs);
  }

  /** One `updateMany` for every held job. */
  async #beat(): Promise<void> {
    if (this.#beating) return;
    this.#beating = true;
    const context = this.#context;
    try {
      const beats = [...context.held.values()];
      if (beats.length === 0) return;
      const outcomes = await context.jobs.updateMany(beats.map((held) => ({ job: held.job })));
      outcomes.forEach((outcome, index) => {
        const held = beats[index] as Held;
        if (context.held.get(held.job.id) !== held) return;
        // Keep the data of the handle: a ctx.update may have replaced it meanwhile.
        if (outcome.status === 'fulfilled') held.job = { ...outcome.value, data: held.job.data };
        else if (JobsError.is(outcome.reason, 'halt')) this.cancel(held);
        else context.emitError(outcome.reason);
      });
    } catch (error) {
      context.emitError(error);
    } finally {
      this.#beating = false;
    }
  }

  /** The job was removed, cancelled or taken over: drop it, and abort its handler. */
  cancel(held: Held): void {
    const context = this.#context;
    const { id } = held.job;
    context.held.delete(id);
    context.table.remove(id);
    context.events.emit('job:cancelled', { id });
    if (held.serial !== undefined) {
      // A run whose signal aborted already (timeout, rotation, shutdown) ends as cancelled too: its job is no longer
      // held, so its end must neither count a crash, nor give the job back, nor finish it.
      if (held.abort === undefined) context.abortRun(held, 'cancel');
      else held.abort = 'cancel';
    }
    if (context.active()) context.requestPump();
  }
}
