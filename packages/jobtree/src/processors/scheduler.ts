// Re-creates couch_replicator_scheduler's gen_server on the main thread: it
// takes jobs of one type from the jobs store through a local queue (batched
// accepts, see LocalQueue in @jobtree/core), runs their handlers in worker
// threads (see handler-pool.ts) or on the main thread (main-thread-runner.ts)
// and, every interval, reschedules: stops
// excess runs, starts pending jobs, rotates continuous jobs out for waiting
// ones. What happens when a run ends is run-outcomes.ts'; heartbeats,
// progress and cancellation are heartbeats.ts', hearing at once of a job
// removed or cancelled cancellation-watch.ts'. On stop it gives back what
// it holds. The decisions are the ScheduleTable's; this file carries them out.

import { type Job, type Jobs, type JsonValue, LocalQueue } from '@jobtree/core';
import { EventEmitter } from 'eventemitter3';
import { systemClock } from '../clock.js';
import { resolveHandler } from './define-handler.js';
import { SchedulerError } from './errors.js';
import { CancellationWatch } from './cancellation-watch.js';
import { HandlerPool, type HandlerPoolEvents } from './handler-pool.js';
import type { HandlerRunner } from './handler-runner.js';
import { startRunSpan } from '../job-tracing.js';
import type { HandlerThreads } from './handler-threads.js';
import { Heartbeats } from './heartbeats.js';
import { answerChildResults } from './child-results.js';
import { type Held, HeldJobs } from './held-jobs.js';
import type {
  AbortCause,
  Handler,
  HandlerFor,
  JobSummary,
  SchedulerEventTypes,
  SchedulerJobs,
  StartSchedulerOptions,
  StopOptions,
} from './interfaces.js';
import { jobSummary } from './job-summary.js';
import type { LaneRun } from './lane-protocol.js';
import { MainThreadRunner } from './main-thread-runner.js';
import { START_SCHEDULER_OPTIONS, type SchedulerSettings, checkStopOptions, resolveProcessorOptions, schedulerSettings } from './processor-options.js';
import { maxRunMsOf } from './retry-policy.js';
import { RunOutcomes } from './run-outcomes.js';
import { RunsAhead } from './runs-ahead.js';
import { type ScheduleEntry, ScheduleTable, type SchedulerStats } from './schedule-table.js';

/**
 * Starts a scheduler for one job type. The type must have an activity
 * timeout (`jobs.setTypeTimeout`): heartbeats go at a third of it. Started
 * alone, a scheduler runs its handlers on `threads` threads of its own,
 * closed when it stops (an app's schedulers share the app's threads
 * instead: a pool shared without an app would have no owner to close it).
 */
export async function startScheduler<T extends string, D = JsonValue, R = unknown>(
  options: Omit<StartSchedulerOptions<D, R, T>, 'handler'> & { handler: HandlerFor<T, D, R> },
): Promise<Scheduler> {
  const { handler, settings } = await checkSchedulerStart(options);
  return new Scheduler(options.jobs, options.type, handler, settings);
}

/**
 * Everything `startScheduler` checks before it starts anything: the
 * options (an unknown key, a bad value: `invalid_option`), the handler
 * (`invalid_handler`, also for a module file that does not exist) and the
 * type's activity timeout (`invalid_option` without one). Resolves with
 * what the scheduler runs (the handler function on the main thread, else
 * its module's URL, see resolveHandler) and the settings it runs on.
 */
export async function checkSchedulerStart(
  options: StartSchedulerOptions<never, unknown>,
): Promise<{ handler: string | Handler<JsonValue, unknown>; settings: SchedulerSettings }> {
  if (typeof options !== 'object' || options === null || typeof options.jobs?.acceptMany !== 'function') {
    throw new SchedulerError('invalid_option', 'startScheduler needs { jobs, type, handler }');
  }
  const resolved = resolveProcessorOptions(options, START_SCHEDULER_OPTIONS);
  const handler = await resolveHandler(options.handler, resolved.runIn);
  const timeout = await options.jobs.getTypeTimeout(options.type);
  if (timeout === undefined) {
    throw new SchedulerError('invalid_option', `job type ${JSON.stringify(options.type)} has no activity timeout: call setTypeTimeout first`);
  }
  return { handler, settings: schedulerSettings(resolved, timeout * 1000) };
}

const RESOLVED = Promise.resolve();
/** Runs started in one turn of the event loop before the pump lets the loop turn (see #requestPump). */
const TURN_STARTS = 64;

export class Scheduler {
  readonly type: string;
  readonly events = new EventEmitter<SchedulerEventTypes>();
  readonly #jobs: Jobs;
  readonly #settings: SchedulerSettings;
  readonly #table: ScheduleTable;
  readonly #held: HeldJobs;
  /** Jobs taken for the slots as they free up, and a few spare while runs end quickly. */
  readonly #queue: LocalQueue;
  readonly #pool: HandlerRunner;
  readonly #outcomes: RunOutcomes;
  readonly #ahead: RunsAhead;
  readonly #heartbeats: Heartbeats;
  readonly #cancellations: CancellationWatch;
  readonly #idle = new Set<() => void>();
  #active = true;
  #stopped: Promise<void> | undefined;
  /** Scheduling cycles (interval and manual) run one at a time, in order. */
  #work: Promise<void> = Promise.resolve();
  #pumpQueued = false;
  /** Runs started since the event loop last turned (see #requestPump). */
  #turnStarts = 0;
  #tickTimer: unknown;

  /**
   * Prefer {@link startScheduler}, which checks the options and the type and
   * resolves the settings. `handler`: a function runs on the main thread, a
   * module URL in handler threads. `shared`: the handler threads it runs on
   * with other types' schedulers (an app's); without, it starts its own.
   */
  constructor(jobs: Jobs, type: string, handler: string | Handler<JsonValue, unknown>, settings: SchedulerSettings, shared?: HandlerThreads) {
    this.type = type;
    this.#jobs = jobs;
    this.#settings = settings;
    this.#table = new ScheduleTable(settings);
    this.#held = new HeldJobs(settings.clock);
    const clock = settings.clock;
    this.#queue = new LocalQueue(jobs, type, {
      slots: {
        free: () => settings.maxJobs - this.#held.size,
        offer: (arrived) => this.#startArrived(arrived),
        failed: (error) => {
          if (this.#active) this.#emitError(error);
        },
        // With the system clock the store decides what is due (and wakes for future jobs); another clock bounds accepts by its time.
        maxSchedTime: clock === systemClock ? undefined : () => clock.now() / 1000,
      },
      holdMs: settings.holdMs,
      waitMs: settings.acceptWaitMs,
    });
    const parts = {
      jobs,
      settings,
      table: this.#table,
      held: this.#held,
      queue: this.#queue,
      events: this.events,
      active: () => this.#active,
      startDue: () => this.#startDue(),
      requestPump: () => this.#requestPump(),
      runOver: () => this.#notifyIdle(),
      pendingWrites: () => this.#outcomes.pendingWrites,
      abortRun: (held: Held, cause: 'cancel') => this.#abortRun(held, cause),
      emitError: (error: unknown) => this.#emitError(error),
    };
    this.#outcomes = new RunOutcomes(parts);
    this.#ahead = new RunsAhead({
      ...parts,
      pool: () => this.#pool,
      begin: (held) => this.#begin(held, this.events.listenerCount('job:started') > 0),
      giveBack: (held) => this.#outcomes.giveBack(held),
    });
    const events: HandlerPoolEvents = {
      started: (serial) => this.#ahead.started(serial),
      returned: (serial) => this.#ahead.returned(serial),
      settled: (serial, ok, outcome) => this.#outcomes.settled(serial, ok, outcome),
      update: (serial, data, reply) => this.#heartbeats.update(serial, data, reply),
      childResults: (serial, reply) => answerChildResults(jobs, this.#held, serial, reply),
      lost: (serial, culprit, reason, culpritJob) => this.#outcomes.lost(serial, culprit, reason, culpritJob),
      threadsRestarting: (event) => this.events.emit('threads:restarting', event),
    };
    this.#pool =
      typeof handler === 'function'
        ? new MainThreadRunner({ handler, jobType: type, events, blockedLoopMs: settings.blockedLoopMs, blocked: (event) => this.events.emit('loop:blocked', event) })
        : new HandlerPool({ handlerUrl: handler, jobType: type, threads: settings.threads, stuckThreadMs: settings.stuckThreadMs, shared, events });
    this.#scheduleTick();
    this.#heartbeats = new Heartbeats(parts);
    this.#cancellations = new CancellationWatch({
      jobs,
      type,
      held: this.#held,
      cancel: (held) => this.#heartbeats.cancel(held),
      emitError: (error) => this.#emitError(error),
    });
    this.#requestPump();
  }

  // --- monitoring -----------------------------------------------------------

  /** Every job the scheduler tracks (held, running, or given back with a crash to remember), like `_scheduler/jobs`. */
  jobs(): SchedulerJobs {
    const jobs: JobSummary[] = [];
    for (const entry of this.#table.entries()) jobs.push(this.#summary(entry));
    for (const entry of this.#queued()) jobs.push(this.#summary(entry));
    return { total_rows: jobs.length, offset: 0, jobs };
  }

  /** One job's summary, or undefined when this scheduler does not track it. */
  job(type: string, id: string): JobSummary | undefined {
    if (type !== this.type) return undefined;
    const entry = this.#table.get(id) ?? this.#queued().find((queued) => queued.id === id);
    return entry === undefined ? undefined : this.#summary(entry);
  }

  /** Counts and average ages of pending, running and crashed jobs. */
  stats(): SchedulerStats {
    return this.#table.stats(this.#settings.clock.now(), this.#queued());
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
      this.#table.insert({ id: old.id, continuous: old.continuous, running: false, held: known?.held ?? false, history: [...old.history], failures: old.failures, retryAt: old.retryAt });
    }
  }

  /** The local queue's jobs the table does not know yet, as held, pending entries. */
  #queued(): ScheduleEntry[] {
    const queued: ScheduleEntry[] = [];
    const now = this.#settings.clock.now();
    const elapsedNow = performance.now();
    for (const { job, takenAt } of this.#queue.heldJobs()) {
      if (this.#table.get(job.id) !== undefined) continue;
      const history = [{ type: 'added' as const, at: now - (elapsedNow - takenAt) }];
      queued.push({ id: job.id, continuous: job.continuous === true, running: false, held: true, history, failures: job.attempts });
    }
    for (const { job } of this.#ahead.queuedJobs()) {
      if (this.#table.get(job.id) === undefined) queued.push({ id: job.id, continuous: false, running: false, held: true, history: [{ type: 'added', at: now }], failures: job.attempts });
    }
    return queued;
  }

  #summary(entry: ScheduleEntry): JobSummary {
    const serial = this.#held.get(entry.id)?.serial;
    const threadId = serial === undefined ? undefined : this.#pool.threadIdOf(serial);
    return jobSummary(this.type, entry, this.#settings.healthThreshold, threadId);
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
    this.#stopped ??= this.#stop(options.graceMs ?? this.#settings.graceMs);
    return this.#stopped;
  }

  async #stop(graceMs: number): Promise<void> {
    this.#active = false;
    this.#settings.clock.clearTimeout(this.#tickTimer);
    await this.#work;
    // The local queue takes no more, and gives back what it holds and what its last takes bring.
    const queueStopped = this.#queue.stop();
    for (const held of [...this.#held.values()]) if (held.serial === undefined) this.#outcomes.giveBack(held);
    const running = [...this.#held.values()].filter((held) => held.serial !== undefined && held.abort === undefined);
    for (const held of running) held.abort = 'shutdown';
    this.#pool.abort(
      running.map((held) => held.serial as number),
      'shutdown',
    );
    await this.#whenIdle(graceMs);
    // Handlers still running lose their threads; their jobs go back.
    const left = [...this.#held.values()].filter((held) => held.serial !== undefined);
    for (const held of left) this.#held.detach(held);
    await this.#pool.close();
    for (const held of left) this.#outcomes.giveBack(held);
    this.#outcomes.flushFinishes();
    await queueStopped;
    await this.#outcomes.settle();
    this.#heartbeats.stop();
    await this.#cancellations.stop();
  }

  /** Resolves when no handler runs, or after `ms`. */
  #whenIdle(ms: number): Promise<void> {
    if (!this.#held.anyRunning()) return Promise.resolve();
    const clock = this.#settings.clock;
    return new Promise((resolve) => {
      const done = (): void => {
        this.#idle.delete(check);
        clock.clearTimeout(timer);
        resolve();
      };
      const check = (): void => {
        if (!this.#held.anyRunning()) done();
      };
      const timer = clock.setTimeout(done, ms);
      this.#idle.add(check);
    });
  }

  #notifyIdle(): void {
    if (this.#idle.size === 0) return;
    for (const check of [...this.#idle]) check();
  }

  // --- starting jobs --------------------------------------------------------

  #enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.#work.then(step).catch((error: unknown) => this.#emitError(error));
    this.#work = next;
    return next;
  }

  /**
   * Fills free slots soon: once for all the runs that end in one turn (one
   * lane message ends many). Cheap to call often.
   */
  #requestPump(): void {
    if (this.#pumpQueued || !this.#active) return;
    this.#pumpQueued = true;
    // A promise reaction rather than queueMicrotask: the latter makes an
    // AsyncResource per call, and with few slots the pump runs about once
    // per job. Handlers that end at once (on the main thread) would chain
    // every held job in one turn, and the local queue's next take, and the
    // finishes, would wait for the chain to end: after TURN_STARTS runs the
    // pump waits for the next turn, so that they go to the store while
    // the held jobs run.
    if (this.#turnStarts < TURN_STARTS) void RESOLVED.then(this.#pump);
    else setImmediate(this.#pump);
  }

  readonly #newTurn = (): void => {
    this.#turnStarts = 0;
  };

  readonly #pump = (): void => {
    this.#pumpQueued = false;
    this.#startDue();
  };

  /**
   * Starts jobs into the free slots: held ones, then jobs of the local
   * queue, in one batch to the handler pool. The queue takes more from the
   * store as its room frees.
   */
  #startDue(): void {
    if (!this.#active) return;
    const table = this.#table;
    this.#launch(this.#holdStarting(this.#queue.takeReady(this.#settings.maxJobs - table.runningCount - table.pendingCount)));
    this.#ahead.queue();
  }

  /** Starts what free slots there are of the jobs a take of the local queue brought; resolves with how many it took. */
  #startArrived(arrived: readonly Job[]): number {
    if (!this.#active) return 0;
    const table = this.#table;
    const count = Math.min(arrived.length, Math.max(0, this.#settings.maxJobs - table.runningCount - table.pendingCount));
    if (this.#turnStarts >= TURN_STARTS) {
      // A take that lands after this turn's share of starts: its jobs wait,
      // held, for the pump of the next turn (see #requestPump).
      this.#hold(arrived, count);
      this.#requestPump();
      return count;
    }
    this.#launch(this.#holdStarting(arrived, count));
    // The rest stay in the local queue: some may go ahead to the lanes (see runs-ahead.ts).
    if (count < arrived.length) this.#requestPump();
    return count;
  }

  /** Holds the first `count` of `jobs`. */
  #hold(jobs: readonly Job[], count = jobs.length): void {
    if (count === 0) return;
    const now = this.#settings.clock.now();
    for (let index = 0; index < count; index++) {
      const job = jobs[index] as Job;
      if (this.#held.hold(job) !== undefined) this.#table.add(job.id, job.continuous === true, now, job.attempts);
    }
  }

  /**
   * Holds the first `count` of `jobs` and marks started what the free slots
   * take, held jobs that waited first, as `#hold` and then the table's fill
   * would; returns the entries to launch. A job new to the table
   * starts without waiting in its pending set (see ScheduleTable.addStarted).
   */
  #holdStarting(jobs: readonly Job[], count = jobs.length): readonly ScheduleEntry[] {
    const table = this.#table;
    const now = this.#settings.clock.now();
    const started: ScheduleEntry[] = [];
    for (let index = 0; index < count; index++) {
      const job = jobs[index] as Job;
      if (this.#held.hold(job) === undefined) continue;
      const continuous = job.continuous === true;
      const entry = table.addStarted(job.id, continuous, now, job.attempts);
      if (entry === undefined) table.add(job.id, continuous, now, job.attempts);
      else started.push(entry);
    }
    const filled = table.fillEntries(now);
    if (started.length === 0) return filled;
    for (const entry of filled) started.push(entry);
    return started;
  }

  /** Starts the runs of `entries`, which the table has just marked started. */
  #launch(entries: readonly ScheduleEntry[]): void {
    if (entries.length === 0) return;
    const batch: (Held & LaneRun)[] = [];
    for (const entry of entries) {
      const { id } = entry;
      const held = this.#held.get(id);
      if (held === undefined || held.serial !== undefined) continue;
      this.#held.startRun(held, entry.failures + 1);
      // The held record is the run: the pool packs what a lane needs from it.
      batch.push(held as Held & LaneRun);
    }
    if (this.#turnStarts === 0) setImmediate(this.#newTurn);
    this.#turnStarts += batch.length;
    const pool = this.#pool;
    if (!pool.callsHandlersInStart) pool.start(batch);
    const announce = this.events.listenerCount('job:started') > 0;
    for (const held of batch) this.#begin(held, announce);
    if (pool.callsHandlersInStart) pool.start(batch);
  }

  /** A run begins: its span, its time limit, and `job:started` when someone listens. */
  #begin(held: Held, announce: boolean): void {
    held.span = startRunSpan(held.job, held.attempt);
    const maxRunMs = maxRunMsOf(held.job, this.#settings);
    if (maxRunMs !== undefined) this.#limitRun(held, maxRunMs);
    if (announce) this.events.emit('job:started', { id: held.job.id, attempt: held.attempt });
  }

  // --- the scheduling cycle -------------------------------------------------

  #scheduleTick(): void {
    if (!this.#active) return;
    this.#tickTimer = this.#settings.clock.setTimeout(() => {
      void this.#enqueue(() => this.#cycle()).then(() => this.#scheduleTick());
    }, this.#settings.interval);
  }

  async #cycle(): Promise<void> {
    if (!this.#active) return;
    const { clock, maxJobs, maxChurn } = this.#settings;
    let continuousRunning = 0;
    for (const entry of this.#table.entries()) if (entry.running && entry.continuous) continuousRunning++;
    // Slots full and jobs waiting: the local queue's, else some from the store, for the cycle to rotate in.
    if (this.#table.runningCount >= maxJobs && maxChurn > 0 && continuousRunning > 0 && this.#table.pendingCount === 0) {
      const limit = Math.min(maxChurn, continuousRunning);
      this.#hold(this.#queue.takeReady(limit));
      if (this.#table.pendingCount === 0) {
        const waiting = await this.#jobs.pendingCount(this.type, { maxSchedTime: clock.now() / 1000, limit });
        if (waiting > 0 && this.#active) this.#hold(await this.#jobs.acceptMany(this.type, waiting, this.#bound()));
      }
    }
    if (!this.#active) return;
    const now = clock.now();
    const { started, stopped } = this.#table.reschedule(now);
    for (const id of stopped) this.#stopRun(id, 'rotation');
    this.#launch(started.map((id) => this.#table.get(id) as ScheduleEntry));
    // Jobs taken for the cycle that it did not start go back at once, and
    // the local queue keeps only its spare jobs (fewer once runs stop
    // ending quickly).
    for (const held of [...this.#held.values()]) if (held.serial === undefined) this.#outcomes.giveBack(held);
    this.#queue.trim();
    this.#table.forget(now);
    this.#requestPump();
  }

  /** With the system clock the store decides what is due; another clock bounds accepts by its time. */
  #bound(): { maxSchedTime?: number } {
    const clock = this.#settings.clock;
    return clock === systemClock ? {} : { maxSchedTime: clock.now() / 1000 };
  }

  /** Aborts a run the cycle stopped; when its handler ends the job goes back to the queue. */
  #stopRun(id: string, cause: 'rotation'): void {
    const held = this.#held.get(id);
    if (held === undefined || held.serial === undefined) return;
    // Not startable while its handler winds down: it is on its way back to the queue.
    this.#table.release(id);
    this.#abortRun(held, cause);
  }

  #abortRun(held: Held, cause: Exclude<AbortCause, 'shutdown'>): void {
    held.abort = cause;
    this.#pool.abort([held.serial as number], cause);
    this.#armGrace(held);
  }

  /** Aborts `held`'s run (cause `timeout`) once it has lasted `ms`; the run then counts as a crash. */
  #limitRun(held: Held, ms: number): void {
    const serial = held.serial;
    held.runTimer = this.#settings.clock.setTimeout(() => {
      held.runTimer = undefined;
      if (held.serial === serial && held.abort === undefined) this.#abortRun(held, 'timeout');
    }, ms);
  }

  #armGrace(held: Held): void {
    const serial = held.serial;
    if (serial === undefined) return;
    const { clock, graceMs } = this.#settings;
    held.graceTimer = clock.setTimeout(() => {
      if (held.serial !== serial) return;
      // A thread still starting up has not shown the handler its signal yet: the grace period starts later.
      if (!this.#pool.isStarted(serial)) this.#armGrace(held);
      else this.#pool.killThreadOf(serial, `the handler ignored its abort signal for ${graceMs} ms`);
    }, graceMs);
  }

  #emitError(error: unknown): void {
    this.events.emit('error', error instanceof Error ? error : new Error(String(error)));
  }
}
