// Re-creates couch_replicator_scheduler's gen_server (with the replication
// job supervisor's part) on the main thread: it takes jobs of one type from
// the jobs store in batches, runs their handlers in worker threads (see
// handler-pool.ts), heartbeats them, finishes them with their results,
// retries crashes with backoff through the job's scheduled time, rotates
// continuous jobs every interval, and on stop gives back what it holds.
// The decisions are ScheduleTable's; this file carries them out.

import { type Job, JobsError, type Jobs, type JsonValue } from '@jobtree/core';
import { EventEmitter } from 'eventemitter3';
import { systemClock } from '../clock.js';
import { checkHandlerModule, handlerUrl } from './define-handler.js';
import { SchedulerError } from './errors.js';
import { isFailedOutcome } from './failed-outcome.js';
import { HandlerPool } from './handler-pool.js';
import type { HistoryEvent } from './history.js';
import type {
  AbortCause,
  FailedOutcome,
  HandlerFor,
  JobSummary,
  SchedulerJobs,
  StartSchedulerOptions,
  StopOptions,
} from './interfaces.js';
import type { LaneRun, SerializedError } from './lane-protocol.js';
import { historyJson, jobSummary } from './job-summary.js';
import { type ResolvedProcessorOptions, START_SCHEDULER_OPTIONS, checkStopOptions, resolveProcessorOptions } from './processor-options.js';
import { ScheduleTable, type SchedulerStats } from './schedule-table.js';

/** The scheduler's events, one namespace per subject. */
export interface SchedulerEventTypes {
  'job:started': [event: { id: string; attempt: number }];
  'job:finished': [event: { id: string; state: 'pending' | 'finished' }];
  /** A run crashed and the job will run again from `retryAt` (epoch ms). */
  'job:crashed': [event: { id: string; error: string; attempt: number; retryAt: number }];
  /** Out of attempts: the job finished with a FailedOutcome. */
  'job:failed': [event: { id: string; error: string; attempts: number }];
  /** A run was stopped without a crash; the job goes back to the queue (rotation, shutdown) or restarts here (thread_lost). */
  'job:stopped': [event: { id: string; cause: Exclude<AbortCause, 'cancel'> | 'thread_lost' }];
  /** The job was removed (or taken over) while this scheduler held it. */
  'job:cancelled': [event: { id: string }];
  /** A store operation failed in the background (the scheduler carries on). */
  error: [error: Error];
}

/** One held job: accepted by this scheduler, its lock owned. */
interface Held {
  job: Job;
  /** performance.now() when accepted. */
  readonly takenAt: number;
  /** The current run's serial while a handler runs it. */
  serial: number | undefined;
  /** The current (or last) run's attempt: 1 + crashes in a row before it. */
  attempt: number;
  /** Set once its handler's signal was aborted. */
  abort: AbortCause | undefined;
  graceTimer: unknown;
  /**
   * Threads lost under it in a row with no culprit named. A thread whose
   * culprit is known (this job: a crash; another job: a bystander) does not
   * count: only losses nobody can explain add up to a crash (see #lost).
   */
  losses: number;
}

/** Takes in flight at once: one committing while the next reads is enough to keep the slots full. */
const MAX_TAKES_IN_FLIGHT = 2;

/**
 * The local queue (jobs accepted beyond the free slots, started the moment a
 * slot frees) is sized to cover this many take round trips at the rate slots
 * free up: long enough that the next take commits before the queue runs dry.
 */
const LOCAL_QUEUE_TAKES = 2;
/** The most jobs the local queue holds, whatever the rate (one acceptMany's most). */
const MAX_LOCAL_QUEUE = 1_000;
/** How often the rate at which runs end is measured. */
const END_RATE_WINDOW_MS = 50;

/** A job that was on this many threads in a row lost with no culprit named counts as their cause. */
const MAX_UNEXPLAINED_LOSSES = 3;

/**
 * Starts a scheduler for one job type. The type must have an activity
 * timeout (`jobs.setTypeTimeout`): heartbeats go at a third of it.
 */
export async function startScheduler<T extends string, D = JsonValue, R = unknown>(
  options: StartSchedulerOptions<D, R, T> & { handler: HandlerFor<T, D, R> },
): Promise<Scheduler> {
  const { url, resolved, timeoutMs } = await checkSchedulerStart(options);
  return new Scheduler(options.jobs, options.type, url, resolved, timeoutMs);
}

/**
 * Everything `startScheduler` checks before it starts anything: the
 * options (an unknown key, a bad value: `invalid_option`), the handler
 * (`invalid_handler`, also for a module file that does not exist) and the
 * type's activity timeout (`invalid_option` without one).
 */
export async function checkSchedulerStart(
  options: StartSchedulerOptions<never, unknown>,
): Promise<{ url: string; resolved: ResolvedProcessorOptions; timeoutMs: number }> {
  if (typeof options !== 'object' || options === null || typeof options.jobs?.acceptMany !== 'function') {
    throw new SchedulerError('invalid_option', 'startScheduler needs { jobs, type, handler }');
  }
  const resolved = resolveProcessorOptions(options, START_SCHEDULER_OPTIONS);
  const url = handlerUrl(options.handler);
  await checkHandlerModule(url);
  const timeout = await options.jobs.getTypeTimeout(options.type);
  if (timeout === undefined) {
    throw new SchedulerError('invalid_option', `job type ${JSON.stringify(options.type)} has no activity timeout: call setTypeTimeout first`);
  }
  return { url, resolved, timeoutMs: timeout * 1000 };
}

export class Scheduler {
  readonly type: string;
  readonly events = new EventEmitter<SchedulerEventTypes>();
  readonly #jobs: Jobs;
  readonly #options: ResolvedProcessorOptions;
  readonly #table: ScheduleTable;
  readonly #pool: HandlerPool;
  readonly #heartbeatMs: number;
  /** Jobs accepted but not started are given back after this long. */
  readonly #holdLimitMs: number;
  readonly #held = new Map<string, Held>();
  readonly #bySerial = new Map<number, Held>();
  readonly #writes = new Set<Promise<void>>();
  readonly #idle = new Set<() => void>();
  /** Finishes waiting for this turn's finishMany: the calls' items, and the held jobs they finish (same order). */
  #finishItems: { job: Job; data: unknown }[] = [];
  #finishHelds: Held[] = [];
  #finishScheduled = false;
  #nextSerial = 1;
  #active = true;
  #stopped: Promise<void> | undefined;
  /** Scheduling cycles (interval and manual) run one at a time, in order. */
  #work: Promise<void> = Promise.resolve();
  #pumpQueued = false;
  /** Takes (non-blocking acceptMany calls) in flight, and the slots they asked for. */
  readonly #takes = new Set<Promise<void>>();
  #asked = 0;
  /** The last take came back short: the queue has nothing more due. */
  #drained = false;
  /** Runs that ended and freed their slot since `#windowStart`, and the rate measured so far (runs per ms). */
  #ends = 0;
  #windowStart = performance.now();
  #endRate = 0;
  /** A non-blocking take's round trip (ms), averaged. */
  #takeMs = 2;
  #waiter: Promise<void> | undefined;
  #tickTimer: unknown;
  #heartbeatTimer: unknown;
  #heartbeating = false;

  /** Prefer {@link startScheduler}, which checks the type and reads its timeout. */
  constructor(jobs: Jobs, type: string, handler: string, options: ResolvedProcessorOptions, typeTimeoutMs: number) {
    this.type = type;
    this.#jobs = jobs;
    this.#options = options;
    this.#table = new ScheduleTable(options.scheduler);
    this.#heartbeatMs = options.heartbeatMs ?? Math.max(1, typeTimeoutMs / 3);
    this.#holdLimitMs = typeTimeoutMs / 2;
    this.#pool = new HandlerPool({
      handlerUrl: handler,
      jobType: type,
      threads: options.threads,
      stuckThreadMs: options.stuckThreadMs,
      events: {
        settled: (serial, ok, outcome) => this.#settled(serial, ok, outcome),
        update: (serial, data, reply) => this.#update(serial, data, reply),
        lost: (serial, culprit, reason) => this.#lost(serial, culprit, reason),
      },
    });
    this.#scheduleTick();
    this.#scheduleHeartbeat();
    this.#requestPump();
  }

  // --- monitoring -----------------------------------------------------------

  /** Every job the scheduler tracks (held, running, or given back with a crash to remember), like `_scheduler/jobs`. */
  jobs(): SchedulerJobs {
    const jobs: JobSummary[] = [];
    for (const entry of this.#table.entries()) jobs.push(this.#summary(entry.id) as JobSummary);
    return { total_rows: jobs.length, offset: 0, jobs };
  }

  /** One job's summary, or undefined when this scheduler does not track it. */
  job(type: string, id: string): JobSummary | undefined {
    return type === this.type ? this.#summary(id) : undefined;
  }

  /** Counts and average ages of pending, running and crashed jobs. */
  stats(): SchedulerStats {
    return this.#table.stats(this.#options.clock.now());
  }

  /** The handler threads (for monitoring and fault injection). */
  get threads(): readonly import('node:worker_threads').Worker[] {
    return this.#pool.threads;
  }

  /** Runs a scheduling cycle now (stop excess, start pending, rotate), as the interval timer does. */
  reschedule(): Promise<void> {
    if (!this.#active) return Promise.reject(new SchedulerError('stopped', `the scheduler of ${JSON.stringify(this.type)} is stopped`));
    return this.#enqueue(() => this.#cycle());
  }

  /**
   * Carries on from a scheduler of the same type that stopped or is
   * stopping (the app calls this when it restarts a killed processor): every
   * job that crashed under it keeps its crashes in a row, its backoff and
   * its history here. Without this a restart would hand a job that had used
   * up attempts a fresh count, and run a handler that hung its thread as if
   * for the first time. Runs still going under `previous` are skipped: their
   * stop ends their streak anyway.
   */
  continueFrom(previous: Scheduler): void {
    if (previous === this || previous.type !== this.type) return;
    for (const old of previous.#table.entries()) {
      if (old.running || old.failures === 0) continue;
      const known = this.#table.get(old.id);
      if (known?.running) continue;
      this.#table.insert({ id: old.id, continuous: old.continuous, running: false, held: known?.held ?? false, history: [...old.history], failures: old.failures });
    }
  }

  // --- stopping -------------------------------------------------------------

  /**
   * Stops: takes no more jobs, gives back the jobs not started, aborts the
   * running handlers' signals (cause `shutdown`) and waits up to `graceMs`
   * for them. A one-shot handler that resolves in that time finishes its
   * job; every other job goes back to the queue, its last progress kept.
   * Nothing is lost. A second call returns the same promise.
   */
  stop(options: StopOptions = {}): Promise<void> {
    try {
      checkStopOptions(options);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#stopped ??= this.#stop(options.graceMs ?? this.#options.graceMs);
    return this.#stopped;
  }

  async #stop(graceMs: number): Promise<void> {
    this.#active = false;
    const clock = this.#options.clock;
    clock.clearTimeout(this.#tickTimer);
    await this.#work;
    await this.#waiter;
    await Promise.all([...this.#takes]);
    for (const held of [...this.#held.values()]) if (held.serial === undefined) this.#giveBack(held);
    const running = [...this.#held.values()].filter((held) => held.serial !== undefined && held.abort === undefined);
    for (const held of running) held.abort = 'shutdown';
    this.#pool.abort(
      running.map((held) => held.serial as number),
      'shutdown',
    );
    await this.#whenIdle(graceMs);
    // Handlers still running lose their threads; their jobs go back.
    const left = [...this.#held.values()].filter((held) => held.serial !== undefined);
    for (const held of left) this.#detach(held);
    await this.#pool.close();
    for (const held of left) this.#giveBack(held);
    this.#flushFinishes();
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
    clock.clearTimeout(this.#heartbeatTimer);
  }

  /** Resolves when no handler runs, or after `ms`. */
  #whenIdle(ms: number): Promise<void> {
    if (!this.#anyRunning()) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#idle.delete(check);
        this.#options.clock.clearTimeout(timer);
        resolve();
      };
      const check = (): void => {
        if (!this.#anyRunning()) done();
      };
      const timer = this.#options.clock.setTimeout(done, ms);
      this.#idle.add(check);
    });
  }

  #anyRunning(): boolean {
    for (const held of this.#held.values()) if (held.serial !== undefined) return true;
    return false;
  }

  // --- taking jobs ----------------------------------------------------------

  #enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.#work.then(step).catch((error: unknown) => this.#emitError(error));
    this.#work = next;
    return next;
  }

  /** Fills free slots: starts held jobs and takes more (see #pump). Cheap to call often. */
  #requestPump(): void {
    if (this.#pumpQueued || !this.#active) return;
    this.#pumpQueued = true;
    queueMicrotask(() => {
      this.#pumpQueued = false;
      this.#pump();
    });
  }

  /**
   * Starts held jobs into free slots and takes jobs for the slots left, in
   * one acceptMany per batch of free slots. Takes are pipelined: slots that
   * free up while one take commits are asked for by the next, up to
   * MAX_TAKES_IN_FLIGHT at once. When a take comes back short (nothing more
   * is due), one blocking accept waits for the next job instead.
   */
  #pump(): void {
    if (!this.#active) return;
    this.#startDue();
    if (this.#waiter !== undefined || this.#takes.size >= MAX_TAKES_IN_FLIGHT) return;
    const free = this.#table.options.maxJobs + this.#localQueueRoom() - this.#held.size - this.#asked;
    if (free <= 0) return;
    this.#asked += free;
    const askedAt = performance.now();
    const take = this.#jobs.acceptMany(this.type, free, this.#bound()).then(
      (taken) => {
        this.#takeMs = (this.#takeMs + performance.now() - askedAt) / 2;
        this.#hold(taken);
        if (!this.#active) {
          for (const job of taken) this.#giveBack(this.#held.get(job.id) as Held);
          return;
        }
        this.#startDue();
        this.#drained = taken.length < free;
      },
      (error: unknown) => {
        if (this.#active) this.#emitError(error);
        this.#drained = true;
      },
    );
    const tracked = take.finally(() => {
      this.#asked -= free;
      this.#takes.delete(tracked);
      if (!this.#active) return;
      // Short: nothing more is due. Another take still in flight decides what
      // follows (re-taking now could spin without ever yielding to I/O).
      if (!this.#drained) this.#requestPump();
      else if (this.#takes.size === 0) this.#armWaiter();
    });
    this.#takes.add(tracked);
  }

  #armWaiter(): void {
    const count = this.#table.options.maxJobs + this.#localQueueRoom() - this.#held.size;
    if (this.#waiter !== undefined || !this.#active || count <= 0) return;
    this.#waiter = (async () => {
      let retryAfter = 0;
      try {
        const taken = await this.#jobs.acceptMany(this.type, count, { ...this.#bound(), timeout: this.#options.acceptWaitMs });
        this.#hold(taken);
        if (this.#active) this.#startDue();
        else for (const job of taken) this.#giveBack(this.#held.get(job.id) as Held);
        this.#drained = taken.length < count;
      } catch (error) {
        if (this.#active) this.#emitError(error);
        retryAfter = this.#options.acceptWaitMs;
      } finally {
        this.#waiter = undefined;
      }
      if (!this.#active) return;
      if (retryAfter > 0) this.#options.clock.setTimeout(() => this.#requestPump(), retryAfter);
      else this.#requestPump();
    })();
  }

  /**
   * How many jobs to hold beyond the free slots: as many as free up, at the
   * rate runs have been ending, during LOCAL_QUEUE_TAKES take round trips.
   * Held jobs are this scheduler's alone until they start (at most
   * `holdLimitMs`, see #heartbeat), so the queue exists only while one-shot
   * runs end quickly: jobs that run long or continuous jobs (which free their
   * slots only by rotation) get none, and keep their slots' worth of jobs
   * visible to other nodes.
   */
  #localQueueRoom(): number {
    const now = performance.now();
    const span = now - this.#windowStart;
    if (span >= END_RATE_WINDOW_MS) {
      // Averaged with the last window; a quiet window halves it.
      this.#endRate = (this.#endRate + this.#ends / span) / 2;
      this.#ends = 0;
      this.#windowStart = now;
    }
    return Math.min(MAX_LOCAL_QUEUE, Math.floor(this.#endRate * this.#takeMs * LOCAL_QUEUE_TAKES));
  }

  /** With the system clock the store decides what is due (and wakes for future jobs); another clock bounds accepts by its time. */
  #bound(): { maxSchedTime?: number } {
    const clock = this.#options.clock;
    return clock === systemClock ? {} : { maxSchedTime: clock.now() / 1000 };
  }

  #hold(jobs: readonly Job[]): void {
    const now = this.#options.clock.now();
    const takenAt = performance.now();
    for (const job of jobs) {
      const known = this.#held.get(job.id);
      if (known !== undefined) {
        known.job = job;
        continue;
      }
      this.#table.add(job.id, job.continuous === true, now);
      this.#held.set(job.id, { job, takenAt, serial: undefined, attempt: 1, abort: undefined, graceTimer: undefined, losses: 0 });
    }
  }

  /** Starts held jobs into free slots. */
  #startDue(): void {
    if (this.#active) this.#launch(this.#table.fill(this.#options.clock.now()));
  }

  #launch(ids: readonly string[]): void {
    if (ids.length === 0) return;
    const batch: LaneRun[] = [];
    const announce = this.events.listenerCount('job:started') > 0;
    for (const id of ids) {
      const held = this.#held.get(id);
      const entry = this.#table.get(id);
      if (held === undefined || entry === undefined || held.serial !== undefined) continue;
      const serial = this.#nextSerial++;
      held.serial = serial;
      held.attempt = entry.failures + 1;
      this.#bySerial.set(serial, held);
      // The held record is the run: the pool packs what a lane needs from it.
      batch.push(held as Held & LaneRun);
      if (announce) this.events.emit('job:started', { id, attempt: held.attempt });
    }
    this.#pool.start(batch);
  }

  // --- the scheduling cycle -------------------------------------------------

  #scheduleTick(): void {
    if (!this.#active) return;
    this.#tickTimer = this.#options.clock.setTimeout(() => {
      void this.#enqueue(() => this.#cycle()).then(() => this.#scheduleTick());
    }, this.#table.options.interval);
  }

  async #cycle(): Promise<void> {
    if (!this.#active) return;
    const clock = this.#options.clock;
    const { maxJobs, maxChurn } = this.#table.options;
    let continuousRunning = 0;
    for (const entry of this.#table.entries()) if (entry.running && entry.continuous) continuousRunning++;
    // Slots full and jobs waiting in the store: take some for the cycle to rotate in.
    if (this.#table.runningCount >= maxJobs && maxChurn > 0 && continuousRunning > 0 && this.#table.pendingCount === 0) {
      const limit = Math.min(maxChurn, continuousRunning);
      const waiting = await this.#jobs.pendingCount(this.type, { maxSchedTime: clock.now() / 1000, limit });
      if (waiting > 0 && this.#active) this.#hold(await this.#jobs.acceptMany(this.type, waiting, this.#bound()));
    }
    if (!this.#active) return;
    const now = clock.now();
    const { started, stopped } = this.#table.reschedule(now);
    for (const id of stopped) this.#stopRun(id, 'rotation');
    this.#launch(started);
    // Jobs taken for the cycle that it did not start go back at once, but for
    // the local queue's worth (the oldest taken).
    let keep = this.#localQueueRoom();
    for (const held of [...this.#held.values()]) if (held.serial === undefined && keep-- <= 0) this.#giveBack(held);
    this.#table.forget(now);
    this.#requestPump();
  }

  /** Aborts a run the cycle stopped; when its handler ends the job goes back to the queue. */
  #stopRun(id: string, cause: 'rotation'): void {
    const held = this.#held.get(id);
    if (held === undefined || held.serial === undefined) return;
    // Not startable while its handler winds down: it is on its way back to the queue.
    this.#table.release(id);
    held.abort = cause;
    this.#pool.abort([held.serial], cause);
    this.#armGrace(held);
  }

  #armGrace(held: Held): void {
    const serial = held.serial;
    if (serial === undefined) return;
    const graceMs = this.#options.graceMs;
    held.graceTimer = this.#options.clock.setTimeout(() => {
      if (held.serial !== serial) return;
      // A thread still starting up has not shown the handler its signal yet: the grace period starts later.
      if (!this.#pool.isStarted(serial)) this.#armGrace(held);
      else this.#pool.killThreadOf(serial, `the handler ignored its abort signal for ${graceMs} ms`);
    }, graceMs);
  }

  // --- runs ending ----------------------------------------------------------

  #settled(serial: number, ok: boolean, outcome: unknown): void {
    const held = this.#detachSerial(serial);
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
  #lost(serial: number, culprit: number | undefined, reason: string): void {
    // Looked up first: the pool reports the culprit's own loss after its bystanders'.
    const cause = culprit === undefined || culprit === serial ? undefined : this.#bySerial.get(culprit)?.job.id;
    const held = this.#detachSerial(serial);
    if (held === undefined) return;
    if (culprit === undefined) held.losses++;
    if (held.abort !== undefined || culprit === serial || held.losses >= MAX_UNEXPLAINED_LOSSES) {
      this.#afterRun(held, false, reason);
      return;
    }
    const blame =
      culprit === undefined ? 'no culprit named' : cause === undefined ? 'taken down by code an ended run left behind' : `taken down by job ${JSON.stringify(cause)}`;
    const now = this.#options.clock.now();
    if (this.#table.get(held.job.id)?.running) this.#table.lose(held.job.id, now, `thread lost (${blame}): ${reason}`);
    this.events.emit('job:stopped', { id: held.job.id, cause: 'thread_lost' });
    if (this.#active) {
      this.#startDue();
      this.#requestPump();
    } else {
      this.#giveBack(held);
    }
    this.#notifyIdle();
  }

  /** A run ended: `ok` with the handler's result as `outcome`, or crashed with `outcome` the reason. */
  #afterRun(held: Held, ok: boolean, outcome: unknown): void {
    // The pump starts due jobs first: once for all the runs one lane message
    // ends, and queued before their finishMany, so the lanes get new jobs
    // before the main thread turns to the store.
    this.#requestPump();
    const { id } = held.job;
    switch (held.abort) {
      case 'cancel':
        break; // already dropped
      case 'rotation':
        this.#giveBack(held);
        this.events.emit('job:stopped', { id, cause: 'rotation' });
        break;
      case 'shutdown':
        if (ok && !held.job.continuous) this.#finish(held, outcome);
        else {
          this.#giveBack(held);
          this.events.emit('job:stopped', { id, cause: 'shutdown' });
        }
        break;
      default:
        this.#ends++;
        if (ok) this.#finish(held, outcome);
        else this.#crash(held, outcome as string);
    }
    this.#notifyIdle();
  }

  #detachSerial(serial: number): Held | undefined {
    const held = this.#bySerial.get(serial);
    if (held === undefined || held.serial !== serial) return undefined;
    this.#detach(held);
    return held;
  }

  /** The run is over for the scheduler (its handler ended, or is being abandoned). */
  #detach(held: Held): void {
    if (held.serial !== undefined) this.#bySerial.delete(held.serial);
    held.serial = undefined;
    if (held.graceTimer !== undefined) {
      this.#options.clock.clearTimeout(held.graceTimer);
      held.graceTimer = undefined;
    }
  }

  #notifyIdle(): void {
    if (this.#idle.size === 0) return;
    for (const check of [...this.#idle]) check();
  }

  #finish(held: Held, data: unknown): void {
    this.#held.delete(held.job.id);
    this.#table.remove(held.job.id);
    // Finishes of the runs that end in one event-loop turn (every lane's
    // messages of that turn) go to the store in one finishMany: fewer, larger
    // calls cost the main thread less than one per message, and the lanes
    // already have their next jobs (the pump runs first, see #afterRun).
    this.#finishItems.push({ job: held.job, data });
    this.#finishHelds.push(held);
    if (!this.#finishScheduled) {
      this.#finishScheduled = true;
      setImmediate(() => this.#flushFinishes());
    }
  }

  #flushFinishes(): void {
    this.#finishScheduled = false;
    const items = this.#finishItems;
    const helds = this.#finishHelds;
    if (items.length === 0) return;
    this.#finishItems = [];
    this.#finishHelds = [];
    this.#track(
      this.#jobs.finishMany(items).then((outcomes) => {
        const announce = this.events.listenerCount('job:finished') > 0;
        for (let index = 0; index < outcomes.length; index++) {
          const outcome = outcomes[index] as (typeof outcomes)[number];
          const held = helds[index] as Held;
          if (outcome.status === 'fulfilled') {
            if (announce) this.events.emit('job:finished', { id: held.job.id, state: outcome.value });
          } else if (isHalt(outcome.reason)) this.events.emit('job:cancelled', { id: held.job.id });
          else if (outcome.reason instanceof JobsError && outcome.reason.code === 'invalid_job_data' && !isFailedOutcome(items[index]?.data)) {
            // A result the store cannot keep is the handler's fault: the job fails with that error.
            this.#track(this.#finishFailed(held, `the handler's result is not storable: ${outcome.reason.message}`, 1, []));
          } else this.#emitError(outcome.reason);
        }
      }),
    );
  }

  #crash(held: Held, reason: string): void {
    const { job } = held;
    const now = this.#options.clock.now();
    this.#held.delete(job.id);
    const attempts = job.continuous ? this.#options.attempts.continuous : this.#options.attempts.oneShot;
    const { outcome, backoffMs, entry } = this.#table.crash(job.id, reason, now, attempts);
    if (outcome === 'failed') {
      this.events.emit('job:failed', { id: job.id, error: reason, attempts: entry.failures });
      this.#track(this.#finishFailed(held, reason, entry.failures, entry.history));
      return;
    }
    this.#table.release(job.id);
    this.events.emit('job:crashed', { id: job.id, error: reason, attempt: entry.failures, retryAt: now + backoffMs });
    this.#track(this.#resubmit(job, (now + backoffMs) / 1000));
  }

  async #finishFailed(held: Held, reason: string, attempts: number, history: readonly HistoryEvent[]): Promise<void> {
    const failed: FailedOutcome = { outcome: 'failed', error: reason, attempts, data: held.job.data, history: historyJson(history) };
    try {
      await this.#jobs.finish(held.job, failed);
    } catch (error) {
      if (!isHalt(error)) throw error;
    }
  }

  /** The job goes back to the queue, due now, with its last progress. */
  #giveBack(held: Held): void {
    const { id } = held.job;
    this.#detach(held);
    this.#held.delete(id);
    const entry = this.#table.get(id);
    const now = this.#options.clock.now();
    if (entry?.running) this.#table.stop(id, now);
    this.#table.release(id);
    this.#track(this.#resubmit(held.job, now / 1000));
  }

  async #resubmit(job: Job, scheduledTime: number): Promise<void> {
    try {
      const flagged = await this.#jobs.resubmit(job, { scheduledTime });
      await this.#jobs.finish(flagged);
    } catch (error) {
      if (!isHalt(error)) throw error;
    }
  }

  #track(write: Promise<void>): void {
    const tracked = write.catch((error: unknown) => this.#emitError(error)).finally(() => this.#writes.delete(tracked));
    this.#writes.add(tracked);
  }

  // --- heartbeats, progress and cancellation --------------------------------

  #scheduleHeartbeat(): void {
    this.#heartbeatTimer = this.#options.clock.setTimeout(() => {
      void this.#heartbeat().finally(() => {
        if (this.#active || this.#held.size > 0 || this.#writes.size > 0) this.#scheduleHeartbeat();
      });
    }, this.#heartbeatMs);
  }

  /** One `updateMany` for every held job, so the activity monitor never takes a live job back. */
  async #heartbeat(): Promise<void> {
    if (this.#heartbeating) return;
    this.#heartbeating = true;
    try {
      const now = performance.now();
      const beats: Held[] = [];
      for (const held of [...this.#held.values()]) {
        if (held.serial === undefined && this.#active && now - held.takenAt > this.#holdLimitMs) this.#giveBack(held);
        else beats.push(held);
      }
      if (beats.length === 0) return;
      const outcomes = await this.#jobs.updateMany(beats.map((held) => ({ job: held.job })));
      outcomes.forEach((outcome, index) => {
        const held = beats[index] as Held;
        if (this.#held.get(held.job.id) !== held) return;
        // Keep the data of the handle: a ctx.update may have replaced it meanwhile.
        if (outcome.status === 'fulfilled') held.job = { ...outcome.value, data: held.job.data };
        else if (isHalt(outcome.reason)) this.#cancel(held);
        else this.#emitError(outcome.reason);
      });
    } catch (error) {
      this.#emitError(error);
    } finally {
      this.#heartbeating = false;
    }
  }

  #update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void {
    const held = this.#bySerial.get(serial);
    if (held === undefined || held.abort === 'cancel') {
      reply({ name: 'SchedulerError', code: 'halt', message: 'the job is no longer this processor\'s' });
      return;
    }
    this.#jobs.update(held.job, data).then(
      (job) => {
        if (this.#held.get(job.id) === held) held.job = job;
        reply();
      },
      (error: unknown) => {
        if (isHalt(error)) {
          reply({ name: 'SchedulerError', code: 'halt', message: (error as Error).message });
          if (this.#held.get(held.job.id) === held) this.#cancel(held);
          return;
        }
        const serialized = error instanceof Error ? error : new Error(String(error));
        reply({ name: serialized.name, code: (error as { code?: unknown }).code === undefined ? 'error' : String((error as { code: unknown }).code), message: serialized.message });
      },
    );
  }

  /** The job was removed or taken over: drop it, and abort its handler. */
  #cancel(held: Held): void {
    const { id } = held.job;
    this.#held.delete(id);
    this.#table.remove(id);
    this.events.emit('job:cancelled', { id });
    if (held.serial !== undefined && held.abort === undefined) {
      held.abort = 'cancel';
      this.#pool.abort([held.serial], 'cancel');
      this.#armGrace(held);
    }
    if (this.#active) this.#requestPump();
  }

  #summary(id: string): JobSummary | undefined {
    const entry = this.#table.get(id);
    if (entry === undefined) return undefined;
    const serial = this.#held.get(id)?.serial;
    const threadId = serial === undefined ? undefined : this.#pool.threadIdOf(serial);
    return jobSummary(this.type, entry, this.#table.options.healthThreshold, threadId);
  }

  #emitError(error: unknown): void {
    this.events.emit('error', error instanceof Error ? error : new Error(String(error)));
  }
}

function isHalt(error: unknown): boolean {
  return error instanceof JobsError && error.code === 'halt';
}

function describeError(error: SerializedError): string {
  return error.name && error.name !== 'Error' ? `${error.name}: ${error.message}` : error.message;
}
