// Handlers on the main thread's event loop, as BullMQ's Worker and
// graphile-worker run them: a run is a call of the handler function with
// the job and the same `ctx` a handler thread gives (handler-context.ts),
// nothing packed or copied on the way in or out. Results go to the store as
// they are (the store refuses what is not JSON, and the job fails with
// that); errors keep their NonRetryableError mark as in threads.
//
// What only threads can do: end a handler. One that ignores its abort past
// the grace period cannot be stopped here; its run is given up (reported
// lost, so its job is crashed, retried or given back as the abort's cause
// says) and whatever it does later is ignored. A handler stuck in a loop
// holds up the whole application: the event loop's delay is watched while
// the runner lives, and a delay over `blockedLoopMs` is reported with the
// jobs that were running.

import { threadId } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { inRunSpan } from '../job-tracing.js';
import { watchEventLoopLag } from './event-loop-lag.js';
import type { HandlerPoolEvents } from './handler-runner.js';
import { type ChildrenReply, RunContext, type RunHost, type UpdateReply } from './handler-context.js';
import type { HandlerRunner } from './handler-runner.js';
import type { AbortCause, Handler, HandlerJob } from './interfaces.js';
import { type LaneRun, serializeError } from './lane-protocol.js';
import { RunSignal } from './run-signal.js';

export interface MainThreadRunnerOptions {
  handler: Handler<JsonValue, unknown>;
  /** The type of every job the runner runs. */
  jobType: string;
  events: HandlerPoolEvents;
  /** A delay of the event loop longer than this (ms) is reported through `blocked`. */
  blockedLoopMs: number;
  /** The event loop was held up for `lagMs` while `jobs` ran (or ended). */
  blocked(event: { lagMs: number; jobs: string[] }): void;
}

/** The most jobs one report of a blocked loop names. */
const NAMED_JOBS = 20;
const RESOLVED = Promise.resolve();

type Then = PromiseLike<unknown>['then'];
const PROMISE_THEN: Then = Promise.prototype.then;

/**
 * The `then` of a handler's return value if it is a promise (or any
 * thenable) to wait for. Read once, inside the try around the handler's
 * call: a getter that throws fails the run like the handler's own throw,
 * and one with side effects runs once, as when a promise is resolved with it.
 */
function thenOf(value: unknown): Then | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  const then: unknown = (value as { then?: unknown }).then;
  return typeof then === 'function' ? (then as Then) : undefined;
}

/**
 * One run on the main thread: its signal, and the host of its `ctx`. One
 * object (and the ctx) per run, so that a run of a handler that uses
 * neither signal nor update allocates little beyond its job.
 */
class MainRun extends RunSignal implements RunHost {
  readonly id: string;
  readonly serial: number;
  readonly #runner: MainThreadRunner;
  readonly #events: HandlerPoolEvents;
  /** How its handler returned at once (see MainThreadRunner's #returned): resolved, with `outcome` its result, or threw it. */
  ok = false;
  outcome: unknown = undefined;

  constructor(id: string, serial: number, runner: MainThreadRunner, events: HandlerPoolEvents) {
    super();
    this.id = id;
    this.serial = serial;
    this.#runner = runner;
    this.#events = events;
  }

  running(): boolean {
    return this.#runner.runOf(this.serial) === this;
  }

  send(data: JsonValue, reply: UpdateReply): void {
    this.#events.update(this.serial, data, reply);
  }

  children(reply: ChildrenReply): void {
    this.#events.childResults(this.serial, reply);
  }
}

export class MainThreadRunner implements HandlerRunner {
  readonly threads = [];
  readonly #options: MainThreadRunnerOptions;
  readonly #runs = new Map<number, MainRun>();
  /**
   * Runs whose handler returned at once (no promise), with how: settled
   * together in one promise reaction after the runs started with them, as
   * each would have been in one of its own, without a promise and two
   * callbacks per run.
   */
  #returned: MainRun[] = [];
  /** Jobs whose runs ended since the loop's delay was last read (the first few): one of them may have held it up. */
  #ended: string[] = [];
  readonly #unwatch: () => void;
  #closed = false;

  constructor(options: MainThreadRunnerOptions) {
    this.#options = options;
    this.#unwatch = watchEventLoopLag((lagMs) => this.#checkLag(lagMs));
  }

  /** The run `serial` while it is this runner's. */
  runOf(serial: number): MainRun | undefined {
    return this.#runs.get(serial);
  }

  threadIdOf(serial: number): number | undefined {
    return this.#runs.has(serial) ? threadId : undefined;
  }

  /** A run's handler is called as the run starts. */
  isStarted(serial: number): boolean {
    return this.#runs.has(serial);
  }

  readonly callsHandlersInStart = true;

  start(runs: readonly LaneRun[]): void {
    for (const run of runs) this.#call(run);
  }

  /** Handlers here start as soon as they are given: no run waits for a message, so none is queued. */
  aheadRoom(): number {
    return 0;
  }

  runAhead(runs: readonly LaneRun[]): void {
    for (const run of runs) {
      this.#options.events.started(run.serial);
      this.#call(run);
    }
  }

  recall(): void {}

  abort(serials: readonly number[], cause: AbortCause): void {
    for (const serial of serials) this.#runs.get(serial)?.abort(cause);
  }

  /** Gives up a run whose handler ignored its abort: nothing can end it here, so only its outcome is dropped. */
  killThreadOf(serial: number, reason: string): void {
    if (!this.#runs.delete(serial)) return;
    this.#options.events.lost(serial, serial, `${reason}; it runs on the main thread, where it cannot be ended: its run is given up, and what it does from now on is ignored`);
  }

  /** Gives up every run (a stop has waited for them what it could); handlers still running are left to end on their own. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatch();
    const left = [...this.#runs.keys()];
    this.#runs.clear();
    for (const serial of left) this.#options.events.lost(serial, undefined, 'the scheduler stopped');
  }

  #call(run: LaneRun): void {
    const { serial, job } = run;
    const { handler, jobType, events } = this.#options;
    const entry = new MainRun(job.id, serial, this, events);
    this.#runs.set(serial, entry);
    const ctx = new RunContext(entry, job.id, entry);
    const handlerJob: HandlerJob<JsonValue> = {
      type: jobType,
      id: job.id,
      data: job.data as JsonValue,
      attempt: run.attempt,
      priority: job.priority,
      scheduledTime: job.scheduledTime,
      continuous: job.continuous === true,
    };
    let value: unknown;
    try {
      value = run.span === undefined ? handler(handlerJob, ctx) : inRunSpan(run.span, () => handler(handlerJob, ctx));
      const then = thenOf(value);
      if (then !== undefined) {
        // In the try too: the native `then` throws at once on an object that only looks like a promise.
        this.#waitFor(entry, value, then);
        return;
      }
    } catch (error) {
      this.#returnedAtOnce(entry, false, serializeError(error));
      return;
    }
    this.#returnedAtOnce(entry, true, value);
  }

  /**
   * Settles `entry` when the thenable its handler returned does, through the
   * `then` read from it already (Promise.resolve(value) would read it again).
   * A native promise's own `then` is called as Promise.resolve(value).then()
   * would, without a promise more; any other goes through a new promise's
   * resolve, which treats what it gives as a promise would (a thenable
   * resolved with, a second call ignored, a throw rejects).
   */
  #waitFor(entry: MainRun, value: unknown, then: Then): void {
    // The callbacks are written inline, not named by a `const`: run from
    // source through tsx (esbuild's keepNames), a named closure costs a
    // `__name` call per job, about 1.5% of an in-process drain at 1 handler.
    if (then === PROMISE_THEN) {
      then.call(
        value,
        (result: unknown) => this.#settle(entry, true, result),
        (error: unknown) => this.#settle(entry, false, serializeError(error)),
      );
      return;
    }
    new Promise<unknown>((resolve, reject) => then.call(value, resolve, reject)).then(
      (result: unknown) => this.#settle(entry, true, result),
      (error: unknown) => this.#settle(entry, false, serializeError(error)),
    );
  }

  #returnedAtOnce(run: MainRun, ok: boolean, outcome: unknown): void {
    if (this.#returned.length === 0) void RESOLVED.then(this.#settleReturned);
    run.ok = ok;
    run.outcome = outcome;
    this.#returned.push(run);
  }

  readonly #settleReturned = (): void => {
    const returned = this.#returned;
    this.#returned = [];
    for (const run of returned) {
      const { ok, outcome } = run;
      run.outcome = undefined;
      this.#settle(run, ok, outcome);
    }
  };

  #settle(entry: MainRun, ok: boolean, outcome: unknown): void {
    const serial = entry.serial;
    // A run given up (or closed) has been reported already.
    if (this.#runs.get(serial) !== entry) return;
    this.#runs.delete(serial);
    if (this.#ended.length < NAMED_JOBS) this.#ended.push(entry.id);
    this.#options.events.settled(serial, ok, outcome);
  }

  #checkLag(lagMs: number): void {
    const ended = this.#ended;
    this.#ended = [];
    if (lagMs <= this.#options.blockedLoopMs) return;
    const jobs = ended;
    for (const run of this.#runs.values()) {
      if (jobs.length >= NAMED_JOBS) break;
      if (!jobs.includes(run.id)) jobs.push(run.id);
    }
    // No job of this runner ran in that time: the delay was someone else's.
    if (jobs.length > 0) this.#options.blocked({ lagMs: Math.round(lagMs), jobs });
  }
}
