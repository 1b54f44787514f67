// `startJobs`: the jobs application, re-creating couch_jobs_app and
// couch_jobs_sup. It opens the store, starts the actor system and the tree
//
//   jobs_sup (rest_for_one, 3 restarts per 10 s)
//    ├─ core                 serves the database to every thread (the bridge)
//    ├─ user_sup             (one_for_one) your actors and supervisors
//    ├─ activity_monitor_sup (one_for_one, 10 per 3 s) activity_monitor:<type>, temporary
//    ├─ notifier_sup         (one_for_one, 10 per 3 s) notifier:<type> (+ linked type_monitor:<type>), temporary
//    └─ jobs_server          starts/stops the per-type children, crashes when one dies
//
// and offers the jobs API, subscriptions and the live tree on one object.

import type {
  ActorDefinition,
  ActorId,
  ActorRef,
  ActorSystem,
  ExitReason,
  Inbox,
  InboxOptions,
  SpawnOptions,
  ThreadId,
} from '@jobtree/actors';
import { ActorError, createActorSystem } from '@jobtree/actors';
import {
  type AcceptOptions,
  type AddOptions,
  type Database,
  type Job,
  type JobInfo,
  type JobState,
  type Jobs,
  JobsError,
  type JobDataOf,
  type JobInputOf,
  type JobSpec,
  type JobStateEntry,
  type JobsInTransaction,
  type PendingCountOptions,
  type Settled,
  type Transaction,
  type WorkerItem,
  type ResubmitOptions,
  type WorkerResubmitOptions,
  openDatabase,
} from '@jobtree/core';
import { type ClockSpec, clockFromSpec } from '../clock.js';
import {
  DEFAULT_GRACE_MS,
  type HandlerFor,
  type JobSummary,
  type ProcessorOptions,
  type Scheduler,
  type SchedulerJobs,
  type SchedulerStats,
  startScheduler,
} from '../processors/index.js';
import { resolveProcessorOptions } from '../processors/processor-options.js';
import { checkSchedulerStart } from '../processors/scheduler.js';
import processorServer from './processor-server.js';
import type { Logger } from 'pino';
import type { ChildSpec, IntensityReachedEvent, SupervisorSpec } from '@jobtree/supervisor';
import { Supervisor, actorStart, createSupervisorEvents, startSupervisor, supervisorChild } from '@jobtree/supervisor';
import { adminTarget } from '../admin/admin-target.js';
import { type AdminEndpoint, AppOperations } from '../admin/app-operations.js';
import { ObservedJobs } from '../admin/observed-jobs.js';
import { type JobsAppSettings, type StartJobsOptions, checkStartOptions } from './app-options.js';
import { type AppStop, CLOSED, appStopped, rootExited } from './app-stop.js';
import { CallsInFlight } from './calls-in-flight.js';
import coreServer from './core-server.js';
import type { SubscriptionState } from './job-event.js';
import { JobsBridge } from './jobs-bridge.js';
import jobsServer, { type JobsServerMessage } from './jobs-server.js';
import { LiveTree, type TreeNode } from './live-tree.js';
import type { JobStateChange, Subscription } from './subscription.js';
import { SubscriptionHub } from './subscription-hub.js';

/** The registered names of the jobs tree's own actors. */
export const SYSTEM_NAMES = {
  root: 'jobs_sup',
  core: 'core',
  user: 'user_sup',
  activityMonitorSup: 'activity_monitor_sup',
  notifierSup: 'notifier_sup',
  server: 'jobs_server',
} as const;

/** The app's actor system, as `app.system` offers it. */
export interface JobsAppSystem {
  /** The actor registered under `name` now; it changes when the actor restarts. */
  whereis(name: string): ActorId | undefined;
  /** Kills an actor abruptly and untrappably (fault injection); resolves once it is dead. */
  kill(target: string | ActorRef | ActorId): Promise<void>;
  /** The live supervision tree: every place, the actor in it, its thread and restarts. */
  tree(): TreeNode;
  /** Resolves with the reason when the actor ends. */
  monitor(target: string | ActorRef | ActorId): Promise<ExitReason>;
  /** A mailbox for main-thread code (see @jobtree/actors). */
  inbox<Msg = unknown>(options?: InboxOptions): Inbox<Msg>;
  /** The host threads alive now. */
  threads(): ThreadId[];
  cast<M>(to: ActorRef<M> | string, msg: M): void;
  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R>;
  /**
   * Starts one of your actors under `user_sup` (a permanent child unless the
   * spec says otherwise); it is stopped when the app closes.
   */
  startChild(spec: ChildSpec): Promise<ActorRef | undefined>;
  /** Starts an actor definition under `user_sup` with the id `options.name ?? id`. */
  startActor<M, A>(id: string, definition: ActorDefinition<M, A>, args: A, options?: Omit<SpawnOptions, 'link' | 'monitor'>): Promise<ActorRef<M>>;
  /** Starts a supervisor of yours under `user_sup`. */
  startSupervisor(id: string, spec: SupervisorSpec): Promise<Supervisor>;
  /** Stops a child of `user_sup` for good: it is not started again when `user_sup` restarts. */
  stopChild(id: string): Promise<void>;
  /**
   * A handle on `user_sup` (whichChildren, terminateChild, …). Children
   * started through the app are started again when `user_sup` restarts
   * (with `core`, or killed); use `stopChild` to end one for good.
   */
  userSupervisor(): Supervisor;
  /** The runtime itself, for everything else. */
  readonly actors: ActorSystem;
}

/** `app.scheduler`: the schedulers `app.process` started, as CouchDB's `_scheduler` endpoints report them. */
export interface AppScheduler {
  /** The current scheduler of a type (it changes when its processor restarts). */
  of(type: string): Scheduler | undefined;
  /** Every job the schedulers hold, like `_scheduler/jobs`. */
  jobs(): SchedulerJobs;
  /** One job's summary, with its history. */
  job(type: string, id: string): JobSummary | undefined;
  /** Counts and average ages of pending, running and crashed jobs, by type. */
  stats(): Record<string, SchedulerStats>;
}

/**
 * How long an app whose root died (with `onRootExit: 'exit'`) spends
 * releasing its threads and store before the process exits anyway.
 */
const EXIT_RELEASE_LIMIT_MS = 10_000;

/** Starts the jobs application. Rejects with a JobsError `invalid_option` for bad options. */
export async function startJobs(options?: StartJobsOptions): Promise<JobsApp> {
  const { store, settings, operations } = checkStartOptions(options);
  const ownsDatabase = !('database' in store);
  const database = 'database' in store ? store.database : await openDatabase(store);
  const app = new JobsApp(database, ownsDatabase, settings, new AppOperations(operations));
  try {
    await app.start();
  } catch (error) {
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}

/**
 * A running jobs application: everything `Jobs` offers, plus subscriptions,
 * the supervision tree and your actors. Make it with {@link startJobs}.
 */
export class JobsApp {
  readonly #database: Database;
  readonly #ownsDatabase: boolean;
  readonly #settings: JobsAppSettings;
  readonly #actors: ActorSystem;
  readonly #tree: LiveTree;
  /** Every handle the core ever made: a killed core's handle keeps serving calls already running on it. */
  readonly #handles = new Set<Jobs>();
  readonly #bridges = new Set<JobsBridge>();
  #jobs: Jobs;
  #root: Supervisor | undefined;
  #hub: SubscriptionHub | undefined;
  #closing: Promise<void> | undefined;
  /** Set when jobs_sup ended on its own: every call rejects with it. */
  #stop: AppStop | undefined;
  /** jobs_sup gave up restarting (its exit reason, `shutdown`, does not say it). */
  #intensityReached: IntensityReachedEvent | undefined;
  readonly #stopped: Promise<AppStop>;
  #resolveStopped!: (stop: AppStop) => void;
  readonly #calls = new CallsInFlight();
  /** Every scheduler started and not stopped yet, the orphans of killed processors included. */
  readonly #liveSchedulers = new Set<Scheduler>();
  readonly #operations: AppOperations;
  readonly system: JobsAppSystem;
  /** The schedulers that `process` started, by job type, and what they report. */
  readonly scheduler: AppScheduler;
  /** The current scheduler of each type, and the processor actor holding it. */
  readonly #schedulers = new Map<string, { scheduler: Scheduler; actor: ActorId }>();
  readonly #clock: ClockSpec;
  /** Children started under user_sup through the app, by id, in start order: a restarted user_sup starts them again. */
  readonly #userChildren = new Map<string, ChildSpec>();

  /** @internal use startJobs */
  constructor(database: Database, ownsDatabase: boolean, settings: JobsAppSettings, operations?: AppOperations) {
    this.#operations = operations ?? new AppOperations(checkStartOptions({}).operations);
    this.#database = database;
    this.#ownsDatabase = ownsDatabase;
    this.#settings = settings;
    this.#actors = createActorSystem({ threads: settings.threads, killTimeoutMs: settings.killTimeoutMs });
    this.#tree = new LiveTree(this.#actors, SYSTEM_NAMES.root);
    // The main thread's calls never wait for a restarting core: they use the newest handle.
    this.#jobs = this.#newHandle();
    this.#stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    this.#clock = { speed: settings.clockSpeed, origin: Date.now() };
    this.#actors.events.on('exited', (event) => {
      for (const bridge of this.#bridges) bridge.ownerExited(event.id);
      this.#processorExited(event.id, event.reason);
    });
    this.scheduler = this.#schedulerFacade();
    this.system = this.#systemFacade();
    this.#operations.followActors(this.#actors.events);
  }

  /** @internal */
  async start(): Promise<void> {
    const s = this.#settings;
    const clock = this.#clock;
    const rootEvents = createSupervisorEvents();
    rootEvents.on('intensity_reached', (event) => {
      this.#intensityReached = event;
    });
    this.#tree.follow([], rootEvents);
    this.#operations.followSupervisor(SYSTEM_NAMES.root, rootEvents);
    // user_sup restarts (killed, or with core) with every child started through the app so far.
    const user = supervisorChild(
      SYSTEM_NAMES.user,
      () => ({ strategy: 'one_for_one', intensity: s.userIntensity, period: s.userPeriodMs, children: [...this.#userChildren.values()] }),
      { name: SYSTEM_NAMES.user },
    );
    const monitors = supervisorChild(SYSTEM_NAMES.activityMonitorSup, { strategy: 'one_for_one', intensity: 10, period: 3_000, children: [] }, { name: SYSTEM_NAMES.activityMonitorSup });
    const notifiers = supervisorChild(SYSTEM_NAMES.notifierSup, { strategy: 'one_for_one', intensity: 10, period: 3_000, children: [] }, { name: SYSTEM_NAMES.notifierSup });
    this.#tree.follow([SYSTEM_NAMES.user], user.events);
    this.#tree.follow([SYSTEM_NAMES.activityMonitorSup], monitors.events, { dropOnExit: true, nameOf: (type) => `activity_monitor:${type}` });
    this.#tree.follow([SYSTEM_NAMES.notifierSup], notifiers.events, {
      dropOnExit: true,
      nameOf: (type) => `notifier:${type}`,
      companion: (name) => `type_monitor:${name.slice('notifier:'.length)}`,
    });
    this.#operations.followSupervisor(SYSTEM_NAMES.user, user.events);
    this.#operations.followSupervisor(SYSTEM_NAMES.activityMonitorSup, monitors.events, (type) => `activity_monitor:${type}`);
    this.#operations.followSupervisor(SYSTEM_NAMES.notifierSup, notifiers.events, (type) => `notifier:${type}`);
    this.#root = await startSupervisor(
      this.#actors,
      {
        strategy: 'rest_for_one',
        intensity: 3,
        period: 10_000,
        children: [
          {
            id: SYSTEM_NAMES.core,
            start: actorStart(coreServer, { attach: () => this.#attachCore(), detach: (bridge) => this.#detachCore(bridge) }, { name: SYSTEM_NAMES.core, placement: 'main' }),
          },
          user,
          monitors,
          notifiers,
          {
            id: SYSTEM_NAMES.server,
            start: actorStart(
              jobsServer,
              {
                supervisor: SYSTEM_NAMES.root,
                clock,
                periodMs: s.typeCheckPeriodMs,
                maxJitterMs: s.typeCheckMaxJitterMs,
                activityMonitorSup: SYSTEM_NAMES.activityMonitorSup,
                notifierSup: SYSTEM_NAMES.notifierSup,
                activityMonitor: { maxJitterMs: s.activityMonitorMaxJitterMs, missingTimeoutCheckMs: s.missingTimeoutCheckMs, clock },
                notifier: { holdoffMs: s.typeMonitorHoldoffMs, pollTimeoutMs: s.typeMonitorPollMs, retryDelayMs: s.retryDelayMs },
              },
              { name: SYSTEM_NAMES.server, placement: 'main' },
            ),
          },
        ],
      },
      { name: SYSTEM_NAMES.root, events: rootEvents },
    );
    void this.#actors.monitor(this.#root.ref).then((reason) => this.#rootExited(reason));
    this.#hub = new SubscriptionHub(this.#actors, {
      notifierOf: (type, previous) => this.#notifierOf(type, previous),
      resubscribeTimeoutMs: s.resubscribeTimeoutMs,
    });
    await this.#operations.start(adminTarget(this));
  }

  /**
   * Resolves once the app has stopped, with why: `closed` after `app.close()`,
   * `root_exited` when its root supervisor jobs_sup ended on its own (killed,
   * or out of restart intensity). Such a stop is the app's end, as in OTP: it
   * logs the reason at error level, rejects every call in flight and every
   * later one with JobsError `app_stopped`, ends open subscriptions with that
   * error, signals running handlers (cause `shutdown`), stops the threads and
   * closes the store if the app opened it; with `onRootExit: 'exit'` the
   * process then exits with code 1. Start a new app to carry on. It never
   * rejects, so leaving it unawaited is safe.
   */
  get stopped(): Promise<AppStop> {
    return this.#stopped;
  }

  /** The admin endpoint (URL, token, metrics), when started with the `admin` option. */
  get admin(): AdminEndpoint | undefined {
    return this.#operations.admin;
  }

  /** The app's pino logger (restarts, crashes, re-enqueues); its level is the `logLevel` option. */
  get logger(): Logger {
    return this.#operations.logger;
  }

  /** The database the app runs on. */
  get database(): Database {
    return this.#database;
  }

  /** The core's current jobs handle (the one the main thread's calls use). */
  get jobs(): Jobs {
    this.#checkOpen();
    return this.#jobs;
  }

  // --- the jobs API ----------------------------------------------------------

  /** Sets a type's timeout; the jobs server starts its activity monitor and notifier before this resolves. */
  async setTypeTimeout(type: string, seconds: number): Promise<void> {
    await this.#calls.track(this.jobs.setTypeTimeout(type, seconds));
    await this.#calls.track(this.#checkTypes());
  }

  async getTypeTimeout(type: string): Promise<number | undefined> {
    return this.#calls.track(this.jobs.getTypeTimeout(type));
  }

  /** Removes a type's timeout; its activity monitor and notifier stop before this resolves. */
  async clearTypeTimeout(type: string): Promise<void> {
    await this.#calls.track(this.jobs.clearTypeTimeout(type));
    await this.#calls.track(this.#checkTypes());
  }

  async getTypes(): Promise<string[]> {
    return this.#calls.track(this.jobs.getTypes());
  }

  async add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
    return this.#calls.track(this.jobs.add(type, id, data, options));
  }

  async remove(type: string, id: string): Promise<boolean> {
    return this.#calls.track(this.jobs.remove(type, id));
  }

  resubmit(type: string, id: string, options?: ResubmitOptions): Promise<JobState>;
  resubmit(job: Job, options?: WorkerResubmitOptions): Promise<Job>;
  async resubmit(typeOrJob: string | Job, idOrOptions?: string | WorkerResubmitOptions, options?: ResubmitOptions): Promise<JobState | Job> {
    if (typeof typeOrJob === 'object' && typeOrJob !== null) return this.#calls.track(this.jobs.resubmit(typeOrJob, idOrOptions as WorkerResubmitOptions | undefined));
    return this.#calls.track(this.jobs.resubmit(typeOrJob, idOrOptions as string, options));
  }

  async getJobState(type: string, id: string): Promise<JobState | undefined> {
    return this.#calls.track(this.jobs.getJobState(type, id));
  }

  async getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    return this.#calls.track(this.jobs.getJobData(type, id));
  }

  async getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    return this.#calls.track(this.jobs.getJob(type, id));
  }

  async getJobs(type?: string): Promise<JobInfo[]> {
    return this.#calls.track(this.jobs.getJobs(type));
  }

  async foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A): Promise<A> {
    return this.#calls.track(this.jobs.foldJobs(type, fold, initial));
  }

  async pendingCount(type: string, options?: PendingCountOptions): Promise<number> {
    return this.#calls.track(this.jobs.pendingCount(type, options));
  }

  async getActiveJobIds(type: string): Promise<string[]> {
    return this.#calls.track(this.jobs.getActiveJobIds(type));
  }

  async accept<T extends string>(type: T, options?: AcceptOptions): Promise<Job<T> | undefined> {
    return this.#calls.track(this.jobs.accept(type, options));
  }

  async update<T extends string>(job: Job<T>, data?: JobInputOf<T>): Promise<Job<T>> {
    return this.#calls.track(this.jobs.update(job, data));
  }

  async finish<T extends string>(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    return this.#calls.track(this.jobs.finish(job, data));
  }

  /** Adds many jobs of one type in as few transactions as the limits allow (see `Jobs.addMany`). */
  async addMany<T extends string>(type: T, jobs: readonly JobSpec<T>[]): Promise<JobState[]> {
    return this.#calls.track(this.jobs.addMany(type, jobs));
  }

  /** Takes up to `max` due jobs of a type in one transaction (see `Jobs.acceptMany`). */
  async acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
    return this.#calls.track(this.jobs.acceptMany(type, max, options));
  }

  /** `update` for many jobs, one outcome each (see `Jobs.updateMany`). */
  async updateMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<Job<T>>[]> {
    return this.#calls.track(this.jobs.updateMany(items));
  }

  /** `finish` for many jobs, one outcome each (see `Jobs.finishMany`). */
  async finishMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#calls.track(this.jobs.finishMany(items));
  }

  /** State and data of many jobs of a type, in one transaction. */
  async getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    return this.#calls.track(this.jobs.getJobStates(type, ids));
  }

  /**
   * The jobs API inside a transaction you already have (couch_jobs'
   * transaction object): a job added there is enqueued atomically with your
   * own writes, and wakes workers and subscribers only if it commits.
   */
  in(tx: Transaction): JobsInTransaction {
    return this.jobs.in(tx);
  }

  isResubmitted(job: Job): boolean {
    return this.jobs.isResubmitted(job);
  }

  // --- subscriptions -----------------------------------------------------------

  /**
   * Subscribes to a job: `sub.state`/`sub.data` are its state now, and the
   * subscription iterates its later state changes. A finished job gives an
   * already-ended subscription; a missing one rejects with `not_found`.
   * Subscribing twice to one job gives the same subscription.
   */
  async subscribe<T extends string>(type: T, id: string): Promise<Subscription<T>> {
    return this.#calls.track(this.#subscriptions().subscribe(type, id)) as Promise<Subscription<T>>;
  }

  /** Ends a subscription and drops the events it had queued. */
  async unsubscribe(sub: Subscription): Promise<void> {
    return this.#calls.track(this.#subscriptions().unsubscribe(sub));
  }

  /**
   * The next event (in `state`, when given) of `sub`, or of whichever of
   * `subs` has the oldest one; the others' events stay queued. `'timeout'`
   * after `timeoutMs` (default: no limit) or when no event can come any more.
   */
  async wait<T extends string>(
    subs: Subscription<T> | Subscription<T>[],
    state?: SubscriptionState,
    timeoutMs = Number.POSITIVE_INFINITY,
  ): Promise<JobStateChange<T> | 'timeout'> {
    return this.#calls.track(this.#subscriptions().wait(subs, state, timeoutMs)) as Promise<JobStateChange<T> | 'timeout'>;
  }

  // --- processors ------------------------------------------------------------------

  /**
   * Runs the jobs of `type` with a handler: a scheduler (couch_replicator's,
   * see the processors section of the README) takes them in batches and runs
   * the handler module's default export in a pool of worker threads. The
   * scheduler lives in the tree as `processor:<type>` under `user_sup`: if it
   * is killed, its handlers are cut off, their jobs go back to the queue and
   * a new scheduler starts. `app.close()` stops it gracefully first.
   * Rejects, before anything starts, with `SchedulerError` `invalid_option`
   * for an unknown or bad option or a type without a timeout,
   * `SchedulerError` `invalid_handler` for a handler that is none (or a
   * module file that does not exist), and with `JobsError` `invalid_option`
   * when the type already has a processor.
   */
  async process<T extends string, D = JobDataOf<T>, R = unknown>(
    type: T,
    handler: HandlerFor<T, D, R>,
    options: ProcessorOptions = {},
  ): Promise<void> {
    this.#checkOpen();
    const name = `processor:${type}`;
    if (this.#actors.whereis(name) !== undefined) throw new JobsError('invalid_option', `job type ${JSON.stringify(type)} already has a processor`);
    const clock = clockFromSpec(this.#clock);
    // Checked here, not only in the child's start: a mistake is the caller's
    // SchedulerError, and no processor starts (to fail, or to fail its jobs).
    resolveProcessorOptions(options);
    await checkSchedulerStart({ clock, ...options, jobs: this.#jobs, type, handler } as Parameters<typeof checkSchedulerStart>[0]);
    let previous: Scheduler | undefined;
    const start = async (actor: ActorId): Promise<Scheduler> => {
      const scheduler = await startScheduler<T, D, R>({ clock, ...options, jobs: this.#jobs, type, handler } as Parameters<typeof startScheduler<T, D, R>>[0]);
      // A restarted processor keeps the crash records of the one it replaces (attempts, backoffs).
      if (previous !== undefined) scheduler.continueFrom(previous);
      previous = scheduler;
      this.#operations.followScheduler(scheduler);
      this.#schedulers.set(type, { scheduler, actor });
      this.#liveSchedulers.add(scheduler);
      return scheduler;
    };
    const stop = async (scheduler: Scheduler, reason: ExitReason): Promise<void> => {
      // A killed user_sup (or core) leaves no time for grace: handlers are cut, their jobs go back at once.
      await scheduler.stop(reason === 'killed' ? { graceMs: 0 } : {});
      this.#liveSchedulers.delete(scheduler);
      if (this.#schedulers.get(type)?.scheduler === scheduler) this.#schedulers.delete(type);
    };
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    await this.#startUserChild({
      id: name,
      start: async (ctx) => {
        // When user_sup restarts, the processor it had may still be stopping
        // (signalling its handlers, resubmitting their jobs): its name is
        // taken until it is done, and that takes at most its grace period.
        const until = performance.now() + graceMs + 5_000;
        while (ctx.whereis(name) !== undefined && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
        return ctx.spawn(processorServer, { start, stop, supervisor: SYSTEM_NAMES.user }, { name, placement: 'main', link: true });
      },
      // The scheduler bounds its own stop by its grace period.
      shutdown: 'infinity',
    });
  }

  /** A processor actor died: a killed one never ran its stop, so its scheduler is stopped now. */
  #processorExited(actor: ActorId, reason: ExitReason): void {
    for (const [type, current] of this.#schedulers) {
      if (current.actor !== actor) continue;
      this.#schedulers.delete(type);
      if (reason === 'killed') void this.#stopScheduler(current.scheduler);
    }
  }

  /** Stops a scheduler at once (its handlers are signalled, their jobs go back to the queue). */
  async #stopScheduler(scheduler: Scheduler): Promise<void> {
    await scheduler.stop({ graceMs: 0 }).catch(() => {});
    this.#liveSchedulers.delete(scheduler);
  }

  #schedulerFacade(): AppScheduler {
    return {
      of: (type) => this.#schedulers.get(type)?.scheduler,
      jobs: () => {
        const jobs = [...this.#schedulers.values()].flatMap(({ scheduler }) => scheduler.jobs().jobs);
        return { total_rows: jobs.length, offset: 0, jobs };
      },
      job: (type, id) => this.#schedulers.get(type)?.scheduler.job(type, id),
      stats: () => Object.fromEntries([...this.#schedulers].map(([type, { scheduler }]) => [type, scheduler.stats()])),
    };
  }

  // --- lifecycle -----------------------------------------------------------------

  /**
   * Stops the tree in reverse start order, ends every subscription, waits
   * for transactions in flight, stops every thread and closes the store (if
   * the app opened it). Running jobs stay running in the store; the next
   * start's activity monitors re-enqueue them. Idempotent; on an app that
   * stopped because jobs_sup died it resolves once that stop is done.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close().finally(() => this.#resolveStopped(CLOSED));
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#operations.stop();
    await this.#hub?.close();
    if (this.#root !== undefined) await this.#root.stop().catch(() => {});
    await this.#actors.shutdown();
    for (const handle of this.#handles) await handle.close();
    if (this.#ownsDatabase) await this.#database.close();
  }

  /**
   * jobs_sup is gone. Unless the app is closing (its root then stops with
   * it), the app stops: OTP stops an application whose top supervisor died.
   */
  #rootExited(reason: ExitReason): void {
    if (this.#closing !== undefined) return;
    const stop = rootExited(SYSTEM_NAMES.root, reason, this.#intensityReached);
    this.#stop = stop;
    const exit = this.#settings.onRootExit === 'exit';
    this.#operations.logger.error(
      { supervisor: SYSTEM_NAMES.root, reason, onRootExit: this.#settings.onRootExit },
      `the jobs app stopped: ${stop.message}${exit ? '; the process exits' : ''}`,
    );
    const error = appStopped(stop);
    this.#calls.rejectAll(error);
    if (exit) setTimeout(() => this.#exitProcess(), EXIT_RELEASE_LIMIT_MS);
    this.#closing = this.#release(error).then(() => {
      this.#resolveStopped(stop);
      // After the callbacks on app.stopped have run.
      if (exit) setImmediate(() => this.#exitProcess());
    });
  }

  /** What is left of a dead tree: subscriptions, handlers, threads, the admin endpoint, the store. */
  async #release(error: JobsError): Promise<void> {
    const steps: (() => Promise<void>)[] = [
      async () => this.#hub?.close(error),
      async () => {
        await Promise.all([...this.#liveSchedulers].map((scheduler) => this.#stopScheduler(scheduler)));
      },
      () => this.#actors.shutdown(),
      async () => {
        for (const handle of this.#handles) await handle.close();
      },
      // Last but the store: the answer to the request that killed the root (a kill route) goes out first.
      () => this.#operations.stop(),
      async () => {
        if (this.#ownsDatabase) await this.#database.close();
      },
    ];
    // One step that fails must not keep the others from releasing what they hold.
    for (const step of steps) {
      await step().catch((cause: unknown) => this.#operations.logger.error({ err: cause }, 'releasing the stopped jobs app failed'));
    }
  }

  #exitProcess(): void {
    try {
      this.#operations.logger.flush();
    } catch {
      // a logger without a buffer to flush
    }
    process.exit(1);
  }

  // --- internals -------------------------------------------------------------------

  #newHandle(): Jobs {
    const handle = new ObservedJobs(this.#database, this.#operations.activity);
    this.#handles.add(handle);
    return handle;
  }

  #attachCore(): JobsBridge {
    // A restarted core re-attaches to the database with a fresh handle.
    if (this.#bridges.size > 0) this.#jobs = this.#newHandle();
    const bridge = new JobsBridge(this.#jobs);
    this.#bridges.add(bridge);
    this.#actors.setCore(bridge);
    return bridge;
  }

  async #detachCore(bridge: JobsBridge): Promise<void> {
    this.#bridges.delete(bridge);
    this.#actors.setCore(undefined);
    if (this.#closing === undefined) return;
    await bridge.jobs.close();
  }

  async #checkTypes(): Promise<void> {
    await this.#actors.call<string[], JobsServerMessage>(SYSTEM_NAMES.server, { type: 'check_types' }, 30_000);
  }

  /** The notifier of `type`: asks the jobs server to check types when there is none (or only `previous`). */
  async #notifierOf(type: string, previous?: ActorId): Promise<ActorId | undefined> {
    const name = `notifier:${type}`;
    const deadline = performance.now() + this.#settings.resubscribeTimeoutMs;
    for (;;) {
      const now = this.#actors.whereis(name);
      if (now !== undefined && now !== previous) return now;
      this.#checkOpen();
      // jobs_server may be restarting (with a killed sibling): wait for it, then make it check.
      try {
        if (this.#actors.whereis(SYSTEM_NAMES.server) !== undefined) {
          await this.#checkTypes();
          const after = this.#actors.whereis(name);
          if (after !== undefined && after !== previous) return after;
          if (after === undefined && !(await this.#hasTimeout(type))) return undefined;
        }
      } catch (error) {
        if (!(error instanceof ActorError)) throw error;
      }
      if (performance.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async #hasTimeout(type: string): Promise<boolean> {
    return (await this.#jobs.getTypeTimeout(type)) !== undefined;
  }

  #subscriptions(): SubscriptionHub {
    this.#checkOpen();
    if (this.#hub === undefined) throw new JobsError('closed', 'the jobs app is not started');
    return this.#hub;
  }

  #checkOpen(): void {
    if (this.#stop !== undefined) throw appStopped(this.#stop);
    if (this.#closing !== undefined) throw new JobsError('closed', 'the jobs app is closed');
  }

  #userSup(): Supervisor {
    this.#checkOpen();
    const id = this.#actors.whereis(SYSTEM_NAMES.user);
    if (id === undefined) throw new JobsError('closed', 'user_sup is not running');
    return new Supervisor(this.#actors, id, createSupervisorEvents());
  }

  /** Starts a child under user_sup and keeps its spec, so that a restarted user_sup starts it again. */
  async #startUserChild(spec: ChildSpec): Promise<ActorRef | undefined> {
    const ref = await this.#userSup().startChild(spec);
    if (spec.restart !== 'temporary') this.#userChildren.set(spec.id, spec);
    return ref;
  }

  #systemFacade(): JobsAppSystem {
    const actors = this.#actors;
    return {
      actors,
      whereis: (name) => actors.whereis(name),
      kill: async (target) => {
        const id = typeof target === 'string' ? (actors.whereis(target) ?? target) : typeof target === 'object' ? target.id : target;
        const dead = actors.monitor(id);
        actors.kill(id);
        await dead;
      },
      tree: () => this.#tree.snapshot(),
      monitor: (target) => actors.monitor(target),
      inbox: (options) => actors.inbox(options),
      threads: () => actors.threads(),
      cast: (to, msg) => actors.cast(to, msg),
      call: (to, msg, timeoutMs) => actors.call(to, msg, timeoutMs),
      startChild: (spec) => this.#startUserChild(spec),
      stopChild: async (id) => {
        const sup = this.#userSup();
        this.#userChildren.delete(id);
        await sup.terminateChild(id);
        await sup.deleteChild(id).catch(() => {});
      },
      userSupervisor: () => this.#userSup(),
      startActor: async <M, A>(id: string, definition: ActorDefinition<M, A>, args: A, options?: Omit<SpawnOptions, 'link' | 'monitor'>) => {
        const ref = await this.#startUserChild({ id, start: actorStart(definition, args, options) });
        if (ref === undefined) throw new JobsError('not_found', `actor ${id} did not start`);
        return ref as ActorRef<M>;
      },
      startSupervisor: async (id, spec) => {
        const child = supervisorChild(id, spec);
        const ref = await this.#startUserChild(child);
        if (ref === undefined) throw new JobsError('not_found', `supervisor ${id} did not start`);
        return new Supervisor(actors, ref, child.events);
      },
    };
  }
}
