// The jobs a scheduler holds: taken from its local queue (or by its
// scheduling cycle) into a slot, their locks owned, running or about to.
// Indexed by job id and by the serial of the run a handler thread reports
// on.

import type { Job } from '@jobtree/core';
import type { TracedRun } from '../job-tracing.js';
import type { AbortCause, Clock } from './interfaces.js';

/** One held job. */
export interface Held extends TracedRun {
  job: Job;
  /** The current run's serial while a handler runs it. */
  serial: number | undefined;
  /** The current (or last) run's attempt: 1 + crashes in a row before it. */
  attempt: number;
  /** Its run is queued in a lane, not started (see runs-ahead.ts). */
  queued: boolean;
  /** Set once its handler's signal was aborted. */
  abort: AbortCause | undefined;
  graceTimer: unknown;
  /** Aborts the run (cause `timeout`) once it has lasted its `maxRunMs`. */
  runTimer: unknown;
  /**
   * Threads lost under it in a row with no culprit named. A thread whose
   * culprit is known (this job: a crash; another job: a bystander) does not
   * count: only losses nobody can explain add up to a crash.
   */
  losses: number;
}

/**
 * Run serials are the process's, not a scheduler's: the handler threads
 * run every type's handlers, and know a run by its serial alone. They fit
 * the lanes' 32-bit status word, so they wrap (a run would have to outlive
 * two billion others to meet its serial again).
 */
let nextSerial = 1;
const MAX_SERIAL = 0x7fffffff;

export class HeldJobs {
  readonly #clock: Clock;
  readonly #byId = new Map<string, Held>();
  readonly #bySerial = new Map<number, Held>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): Held | undefined {
    return this.#byId.get(id);
  }

  /** Held jobs in the order they were taken. */
  values(): IterableIterator<Held> {
    return this.#byId.values();
  }

  /** Holds `job`; a job held already gets the newer handle. Resolves with it when it is new. */
  hold(job: Job): Held | undefined {
    const known = this.#byId.get(job.id);
    if (known !== undefined) {
      known.job = job;
      return undefined;
    }
    const held: Held = { job, serial: undefined, attempt: 1, queued: false, abort: undefined, graceTimer: undefined, runTimer: undefined, losses: 0, span: undefined };
    this.#byId.set(job.id, held);
    return held;
  }

  /** The job is no longer held (finished, given back, crashed or cancelled). */
  delete(id: string): void {
    this.#byId.delete(id);
  }

  /** A new run of `held`: its serial, by which the handler pool reports on it. */
  startRun(held: Held, attempt: number): number {
    const serial = nextSerial;
    nextSerial = nextSerial === MAX_SERIAL ? 1 : nextSerial + 1;
    held.serial = serial;
    held.attempt = attempt;
    this.#bySerial.set(serial, held);
    return serial;
  }

  /** The held job whose current run is `serial`. */
  bySerial(serial: number): Held | undefined {
    return this.#bySerial.get(serial);
  }

  /** The held job whose run `serial` is over, detached from it; undefined for a run the scheduler already let go. */
  endRun(serial: number): Held | undefined {
    const held = this.#bySerial.get(serial);
    if (held === undefined || held.serial !== serial) return undefined;
    this.detach(held);
    return held;
  }

  /** The run is over for the scheduler (its handler ended, or is being abandoned). */
  detach(held: Held): void {
    if (held.serial !== undefined) this.#bySerial.delete(held.serial);
    held.serial = undefined;
    if (held.graceTimer !== undefined) {
      this.#clock.clearTimeout(held.graceTimer);
      held.graceTimer = undefined;
    }
    if (held.runTimer !== undefined) {
      this.#clock.clearTimeout(held.runTimer);
      held.runTimer = undefined;
    }
  }

  /** Whether a handler runs a held job (a cancelled job's run, no longer held, does not count). */
  anyRunning(): boolean {
    for (const held of this.#byId.values()) if (held.serial !== undefined) return true;
    return false;
  }
}
