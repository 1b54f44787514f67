// `startJobs`: the jobs application, re-creating couch_jobs_app. It opens
// the store, starts the actor system and the jobs tree (jobs-tree.ts), and
// offers on one object the jobs API (on the core's newest handle,
// core-handles.ts; rejected with `app_stopped` once the root has died),
// subscriptions, the processors of `app.process` (processor-registry.ts),
// and the live tree and your actors (`app.system`, app-system.ts). On an
// embedded store shared by several processes it also serves the others
// while it owns the store, and reaches the owner while it does not.
//
// Over 500 lines for one reason: this is the public class, every method of
// the app's API with its documentation, and a class's methods cannot be
// spread over files; what each method does lives in the modules it names.

import { setMaxListeners } from 'node:events';
import type { ActorSystem, ExitReason } from '@jobtree/actors';
import { createActorSystem } from '@jobtree/actors';
import {
  type AcceptOptions,
  type AddOptions,
  type Database,
  DEFAULT_DATA_PATH,
  type FlowChild,
  type FlowNode,
  type FlowSpec,
  type Job,
  type JobInfo,
  type JobsFilter,
  type JobState,
  type Jobs,
  JobsError,
  type JobDataOf,
  type JobInputOf,
  type JobSpec,
  type JobStateEntry,
  type JobsInTransaction,
  type PausedType,
  type ScheduleSpec,
  type PendingCountOptions,
  type Settled,
  type StoreRole,
  StoreSharing,
  servedJobsCalls,
  type Transaction,
  type WorkerItem,
  type ResubmitOptions,
  type WorkerResubmitOptions,
  openDatabase,
} from '@jobtree/core';
import { type ClockSpec, clockFromSpec } from '../clock.js';
import { tracedAdd, tracedAddFlow, tracedAddMany } from '../job-tracing.js';
import type { HandlerFor, ProcessorOptions } from '../processors/index.js';
import type { Logger } from 'pino';
import type { StoreDurability, TypeLimits } from '@jobtree/core';
import type { EventEmitter } from 'eventemitter3';
import type { IntensityReachedEvent, Supervisor } from '@jobtree/supervisor';
import { startSupervisor } from '@jobtree/supervisor';
import { adminTarget } from '../admin/admin-target.js';
import { type AdminEndpoint, AppOperations } from '../admin/app-operations.js';
import { type JobsAppSettings, type StartJobsOptions, checkStartOptions } from './app-options.js';
import { type JobsAppEventTypes, appEvents } from './app-events.js';
import { type AppStop, CLOSED, appStopped, rootExited } from './app-stop.js';
import { type JobsAppSystem, appSystem } from './app-system.js';
import { CallsInFlight } from './calls-in-flight.js';
import { type CoreStore, CoreHandles } from './core-handles.js';
import type { SubscriptionState } from './job-event.js';
import type { JobsServerMessage } from './jobs-server.js';
import { SYSTEM_NAMES, jobsTree } from './jobs-tree.js';
import { LiveTree } from './live-tree.js';
import { findNotifier } from './notifier-lookup.js';
import { type AppScheduler, ProcessorRegistry } from './processor-registry.js';
import { RemoteSubscriptions } from './remote-subscriptions.js';
import { FlowSubscription } from './flow-subscription.js';
import { servedAppCalls } from './served-app-calls.js';
import { type ScheduleInfo, type ScheduleOptions, scheduleInput, withNextTicks, zoneLeftOut } from './app-schedules.js';
import type { ScheduleTickerMessage } from './schedule-ticker.js';
import type { JobStateChange, Subscription } from './subscription.js';
import { SubscriptionHub } from './subscription-hub.js';
import { waitForEvent } from './subscription-wait.js';
import { UserChildren } from './user-children.js';

export { SYSTEM_NAMES } from './jobs-tree.js';
export type { AppScheduler } from './processor-registry.js';
export type { JobsAppSystem } from './app-system.js';
export type { JobsAppEventTypes } from './app-events.js';

/**
 * How long an app whose root died (with `onRootExit: 'exit'`) spends
 * releasing its threads and store before the process exits anyway.
 */
const EXIT_RELEASE_LIMIT_MS = 10_000;

/** Starts the jobs application. Rejects with a JobsError `invalid_option` for bad options. */
export async function startJobs(options?: StartJobsOptions): Promise<JobsApp> {
  const { store, settings, operations } = checkStartOptions(options);
  let opened: OpenedStore;
  if ('database' in store) opened = { store: { database: store.database }, owned: false };
  else if ('clusterFile' in store && store.clusterFile !== undefined) opened = { store: { database: await openDatabase(store) }, owned: true };
  else {
    // The embedded store by path: shared with the other processes that open it (this one owns it, or is a client of its owner).
    const embedded = store as { path?: string; role?: 'auto' | 'owner' | 'client'; ownerWaitMs?: number; durability?: StoreDurability };
    const sharing = await StoreSharing.open({
      path: embedded.path ?? DEFAULT_DATA_PATH,
      ...(embedded.durability !== undefined ? { durability: embedded.durability } : {}),
      ...(embedded.role !== undefined ? { role: embedded.role } : {}),
      ...(embedded.ownerWaitMs !== undefined ? { ownerWaitMs: embedded.ownerWaitMs } : {}),
    });
    opened = { store: { sharing }, owned: true };
  }
  const app = new JobsApp(opened, settings, new AppOperations(operations));
  try {
    await app.start();
  } catch (error) {
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}

/** The store an app runs on, and whether the app opened it (and closes it). */
interface OpenedStore {
  store: CoreStore;
  owned: boolean;
}

/**
 * A running jobs application: everything `Jobs` offers, plus subscriptions,
 * the supervision tree and your actors. Make it with {@link startJobs}.
 */
export class JobsApp {
  readonly #store: CoreStore;
  readonly #ownsStore: boolean;
  readonly #settings: JobsAppSettings;
  readonly #actors: ActorSystem;
  readonly #tree: LiveTree;
  readonly #core: CoreHandles;
  #root: Supervisor | undefined;
  #hub: SubscriptionHub | undefined;
  /** Subscriptions served by the owner of a shared store, while this process is its client. */
  #remote: RemoteSubscriptions | undefined;
  #closing: Promise<void> | undefined;
  /** Set when jobs_sup ended on its own: every call rejects with it. */
  #stop: AppStop | undefined;
  /** Aborted when the app closes or stops: what waits on the tree stops waiting. */
  readonly #ended = new AbortController();
  /** jobs_sup gave up restarting (its exit reason, `shutdown`, does not say it). */
  #intensityReached: IntensityReachedEvent | undefined;
  readonly #stopped: Promise<AppStop>;
  #resolveStopped!: (stop: AppStop) => void;
  readonly #calls = new CallsInFlight();
  readonly #operations: AppOperations;
  readonly #clock: ClockSpec;
  readonly #userChildren: UserChildren;
  readonly #processors: ProcessorRegistry;
  readonly system: JobsAppSystem;
  /** The schedulers that `process` started, by job type, and what they report. */
  readonly scheduler: AppScheduler;
  /** `job:failed` and `job:cancelled`, as they happen in this process, and `loop:blocked` (see {@link JobsAppEventTypes}). */
  readonly events: EventEmitter<JobsAppEventTypes>;

  /** @internal use startJobs */
  constructor(opened: OpenedStore, settings: JobsAppSettings, operations?: AppOperations) {
    this.#operations = operations ?? new AppOperations(checkStartOptions({}).operations);
    this.#store = opened.store;
    this.#ownsStore = opened.owned;
    this.#settings = settings;
    // Every lookup waiting for a notifier listens to it: any number may wait at once.
    setMaxListeners(0, this.#ended.signal);
    this.#actors = createActorSystem({ threads: settings.threads, killTimeoutMs: settings.killTimeoutMs });
    this.#tree = new LiveTree(this.#actors, SYSTEM_NAMES.root);
    this.#clock = { speed: settings.clockSpeed, origin: Date.now() };
    // Rate limits count on the app's clock too.
    this.#core = new CoreHandles(opened.store, this.#operations.activity, this.#actors, () => this.#closing !== undefined, clockFromSpec(this.#clock));
    this.#stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    this.#userChildren = new UserChildren(this.#actors, () => this.#checkOpen());
    this.#processors = new ProcessorRegistry({
      actors: this.#actors,
      clock: this.#clock,
      jobs: () => this.#core.current,
      userChildren: this.#userChildren,
      operations: this.#operations,
      handlerThreads: settings.handlerThreads,
    });
    this.scheduler = this.#processors.scheduler;
    this.events = appEvents(this.#operations.activity, this.#operations.logger);
    this.system = appSystem(this.#actors, this.#tree, this.#userChildren);
    this.#operations.followActors(this.#actors.events);
  }

  /** @internal */
  async start(): Promise<void> {
    const tree = jobsTree({
      settings: this.#settings,
      clock: this.#clock,
      core: this.#core.core,
      userChildren: () => this.#userChildren.specs(),
    });
    tree.root.events.on('intensity_reached', (event) => {
      this.#intensityReached = event;
    });
    this.#tree.follow([], tree.root.events);
    this.#operations.followSupervisor(SYSTEM_NAMES.root, tree.root.events);
    for (const sup of tree.supervisors) {
      this.#tree.follow([sup.name], sup.events, sup);
      this.#operations.followSupervisor(sup.name, sup.events, sup.nameOf);
    }
    this.#root = await startSupervisor(this.#actors, tree.root.spec, { name: SYSTEM_NAMES.root, events: tree.root.events });
    void this.#actors.monitor(this.#root.ref).then((reason) => this.#rootExited(reason));
    const lookup = {
      actors: this.#actors,
      checkTypes: () => this.#checkTypes(),
      hasTimeout: async (type: string) => (await this.#core.current.getTypeTimeout(type)) !== undefined,
      checkOpen: () => this.#checkOpen(),
      ended: this.#ended.signal,
      timeoutMs: this.#settings.resubscribeTimeoutMs,
    };
    const hubOptions = {
      notifierOf: (type: string, previous?: string) => findNotifier(lookup, type, previous),
      resubscribeTimeoutMs: this.#settings.resubscribeTimeoutMs,
    };
    this.#hub = new SubscriptionHub(this.#actors, hubOptions);
    if ('sharing' in this.#store) this.#share(this.#store.sharing, hubOptions);
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

  /**
   * The database the app runs on. On an embedded store shared by several
   * processes, only the owner has it: a client gets JobsError `not_owner`.
   */
  get database(): Database {
    if ('database' in this.#store) return this.#store.database;
    const database = this.#store.sharing.database;
    if (database !== undefined) return database;
    throw new JobsError('not_owner', `the store is owned by process ${this.#store.sharing.ownerPid}: its database is there, this process reaches it through the jobs API`);
  }

  /**
   * `owner` when this process runs the store's transactions (always on
   * FoundationDB or on a database you passed), `client` while it shares an
   * embedded store that another process owns. A client becomes the owner
   * when the owner goes away and it takes the store over.
   */
  get role(): StoreRole {
    return 'sharing' in this.#store ? this.#store.sharing.role : 'owner';
  }

  /** The core's current jobs handle (the one the main thread's calls use). */
  get jobs(): Jobs {
    this.#checkOpen();
    return this.#core.current;
  }

  // --- the jobs API ----------------------------------------------------------

  /** Sets a type's timeout; the jobs server starts its activity monitor and notifier before this resolves. */
  async setTypeTimeout(type: string, seconds: number): Promise<void> {
    await this.#call((jobs) => jobs.setTypeTimeout(type, seconds));
    await this.#calls.track(this.#checkTypes());
  }

  getTypeTimeout(type: string): Promise<number | undefined> {
    return this.#call((jobs) => jobs.getTypeTimeout(type));
  }

  /** Removes a type's timeout; its activity monitor and notifier stop before this resolves. */
  async clearTypeTimeout(type: string): Promise<void> {
    await this.#call((jobs) => jobs.clearTypeTimeout(type));
    await this.#calls.track(this.#checkTypes());
  }

  getTypes(): Promise<string[]> {
    return this.#call((jobs) => jobs.getTypes());
  }

  /**
   * Sets a type's limits in the store (see `Jobs.setTypeLimits`): at most
   * `concurrency` of its jobs running at once and at most `rate.max` starts
   * per `rate.perMs`, across every process and node of the store; `null`
   * lifts them.
   */
  setLimits(type: string, limits: TypeLimits | null): Promise<void> {
    return this.#call((jobs) => jobs.setTypeLimits(type, limits));
  }

  /** A type's limits, or `undefined` when it has none. */
  getLimits(type: string): Promise<TypeLimits | undefined> {
    return this.#call((jobs) => jobs.getTypeLimits(type));
  }

  /**
   * Pauses a type in the store: no process that shares it (nor any node on
   * FoundationDB) starts a job of it until `resume`, also after restarts.
   * Running jobs finish; `add` still adds.
   */
  pause(type: string): Promise<void> {
    return this.#call((jobs) => jobs.pause(type));
  }

  /** Resumes a paused type: its waiting processors and accepts take its backlog at once. */
  resume(type: string): Promise<void> {
    return this.#call((jobs) => jobs.resume(type));
  }

  isPaused(type: string): Promise<boolean> {
    return this.#call((jobs) => jobs.isPaused(type));
  }

  /** The paused types, each with when it was paused (ms since the epoch). */
  getPausedTypes(): Promise<PausedType[]> {
    return this.#call((jobs) => jobs.getPausedTypes());
  }

  /** Adds a job (see `Jobs.add`), under an OpenTelemetry span whose context the job carries to its runs when a tracer records. */
  add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
    return tracedAdd(type, id, options, (traced) => this.#call((jobs) => jobs.add(type, id, data, traced)));
  }

  /**
   * Stores a recurring job: at each tick of `spec` (a cron expression, 5
   * fields or 6 with seconds first, in `options.timezone`, by default the
   * zone of the schedule it replaces, else this process's, stored with it;
   * or `{ everyMs }`, at least 1000) a job of `options.type` is
   * added with id `<name>@<tick ISO time>`, once per tick however many
   * processes or nodes run the app. Setting a name again replaces its
   * schedule. A bad cron expression or time zone, or one that never matches,
   * rejects with JobsError `invalid_schedule`. Resolves with the stored schedule.
   */
  async schedule(name: string, spec: string | ScheduleSpec, options: ScheduleOptions): Promise<ScheduleInfo> {
    // Read apart from the write: two first settings at once from two zones store the later one's zone, and each setting after keeps it.
    const stored = zoneLeftOut(spec, options) ? await this.#call((jobs) => jobs.getSchedule(name)) : undefined;
    const input = scheduleInput(name, spec, options, clockFromSpec(this.#clock).now(), stored);
    const record = await this.#call((jobs) => jobs.setSchedule(input));
    this.#wakeScheduleTicker();
    return record;
  }

  /** Removes a schedule (the jobs its ticks added stay). Resolves with whether it existed. */
  unschedule(name: string): Promise<boolean> {
    return this.#call((jobs) => jobs.removeSchedule(name));
  }

  /** The stored schedules, by name, each with its next tick (`nextTick`) as of now and its last (`lastTick`), in ms. */
  async schedules(): Promise<ScheduleInfo[]> {
    const records = await this.#call((jobs) => jobs.getSchedules());
    return withNextTicks(records, clockFromSpec(this.#clock).now());
  }

  #wakeScheduleTicker(): void {
    // A restarting ticker looks at the schedules when it starts anyway.
    if (this.#actors.whereis(SYSTEM_NAMES.scheduleTicker) === undefined) return;
    this.#actors.cast<ScheduleTickerMessage>(SYSTEM_NAMES.scheduleTicker, { type: 'check' });
  }

  remove(type: string, id: string): Promise<boolean> {
    return this.#call((jobs) => jobs.remove(type, id));
  }

  /**
   * Ends a pending or running job as finished with outcome `cancelled`, its
   * data kept (a running job's worker gets `halt` at its next update or
   * finish). Resolves with whether this call ended it (see `Jobs.cancel`).
   */
  cancel(type: string, id: string): Promise<boolean> {
    return this.#call((jobs) => jobs.cancel(type, id));
  }

  /**
   * Runs a failed or cancelled job again with its input and a fresh count of
   * attempts; `not_retryable` for any other job (see `Jobs.retry`).
   */
  retry(type: string, id: string): Promise<void> {
    return this.#call((jobs) => jobs.retry(type, id));
  }

  /**
   * Adds a flow in one transaction: a parent job with its children (which
   * may have children too). A parent is `waiting` until its children have
   * ended, then pending; its handler reads their outcomes with
   * `ctx.childResults()`. `onChildFailure` (`fail`, `ignore`, `continue`)
   * says what a child that fails, is cancelled or is removed does to its
   * parent. Every job must be new (see `Jobs.addFlow`).
   */
  addFlow(flow: FlowSpec): Promise<JobState> {
    return tracedAddFlow(flow, (traced) => this.#call((jobs) => jobs.addFlow(traced)));
  }

  /** The children of a flow job, with their states and outcomes (see `Jobs.getChildren`). */
  getChildren(type: string, id: string): Promise<FlowChild[]> {
    return this.#call((jobs) => jobs.getChildren(type, id));
  }

  /** The flow under a job as one tree, each job with its state and outcome; `undefined` for a job in no flow (see `Jobs.getFlow`). */
  getFlow(type: string, id: string): Promise<FlowNode | undefined> {
    return this.#call((jobs) => jobs.getFlow(type, id));
  }

  resubmit(type: string, id: string, options?: ResubmitOptions): Promise<JobState>;
  resubmit(job: Job, options?: WorkerResubmitOptions): Promise<Job>;
  resubmit(typeOrJob: string | Job, idOrOptions?: string | WorkerResubmitOptions, options?: ResubmitOptions): Promise<JobState | Job> {
    if (typeof typeOrJob === 'object' && typeOrJob !== null) return this.#call((jobs) => jobs.resubmit(typeOrJob, idOrOptions as WorkerResubmitOptions | undefined));
    return this.#call((jobs) => jobs.resubmit(typeOrJob, idOrOptions as string, options));
  }

  getJobState(type: string, id: string): Promise<JobState | undefined> {
    return this.#call((jobs) => jobs.getJobState(type, id));
  }

  getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    return this.#call((jobs) => jobs.getJobData(type, id));
  }

  getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    return this.#call((jobs) => jobs.getJob(type, id));
  }

  /** The jobs of a type (of every type without one); `filter.outcome`: only the finished jobs that ended so (see `Jobs.getJobs`). */
  getJobs(type?: string, filter?: JobsFilter): Promise<JobInfo[]> {
    return this.#call((jobs) => jobs.getJobs(type, filter));
  }

  foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A, filter?: JobsFilter): Promise<A> {
    return this.#call((jobs) => jobs.foldJobs(type, fold, initial, filter));
  }

  pendingCount(type: string, options?: PendingCountOptions): Promise<number> {
    return this.#call((jobs) => jobs.pendingCount(type, options));
  }

  getActiveJobIds(type: string): Promise<string[]> {
    return this.#call((jobs) => jobs.getActiveJobIds(type));
  }

  accept<T extends string>(type: T, options?: AcceptOptions): Promise<Job<T> | undefined> {
    return this.#call((jobs) => jobs.accept(type, options));
  }

  update<T extends string>(job: Job<T>, data?: JobInputOf<T>): Promise<Job<T>> {
    return this.#call((jobs) => jobs.update(job, data));
  }

  finish<T extends string>(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    return this.#call((jobs) => jobs.finish(job, data));
  }

  /** Adds many jobs of one type in as few transactions as the limits allow (see `Jobs.addMany`). */
  addMany<T extends string>(type: T, jobs: readonly JobSpec<T>[]): Promise<JobState[]> {
    return tracedAddMany(type, jobs, (traced) => this.#call((handle) => handle.addMany(type, traced)));
  }

  /** Takes up to `max` due jobs of a type in one transaction (see `Jobs.acceptMany`). */
  acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
    return this.#call((jobs) => jobs.acceptMany(type, max, options));
  }

  /** `update` for many jobs, one outcome each (see `Jobs.updateMany`). */
  updateMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<Job<T>>[]> {
    return this.#call((jobs) => jobs.updateMany(items));
  }

  /** `finish` for many jobs, one outcome each (see `Jobs.finishMany`). */
  finishMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#call((jobs) => jobs.finishMany(items));
  }

  /** State and data of many jobs of a type, in one transaction. */
  getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    return this.#call((jobs) => jobs.getJobStates(type, ids));
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
    const remote = this.#remote;
    if (remote?.active) {
      this.#checkOpen();
      return this.#calls.track(remote.subscribe(type, id)) as Promise<Subscription<T>>;
    }
    return this.#calls.track(this.#subscriptions().subscribe(type, id)) as Promise<Subscription<T>>;
  }

  /**
   * Subscribes to the flow under a job: `sub.tree` is the flow now (as
   * `getFlow` reads it), and the subscription iterates every later state
   * change of any job in it, each naming the job and its parent, in order
   * per job, until the job subscribed to reaches `finished` or `not_found`.
   * Rejects with `not_found` for a missing job and `not_in_flow` for a job
   * in no flow.
   */
  async subscribeFlow(type: string, id: string): Promise<FlowSubscription> {
    this.#checkOpen();
    return this.#calls.track(
      FlowSubscription.open(
        {
          getFlow: (flowType, flowId) => this.getFlow(flowType, flowId),
          getJobStates: (jobType, ids) => this.getJobStates(jobType, ids),
          subscribe: (jobType, jobId) => {
            const remote = this.#remote;
            if (remote?.active) return remote.subscribe(jobType, jobId, { shared: false });
            return this.#subscriptions().subscribe(jobType, jobId, { shared: false });
          },
          unsubscribe: (sub) => this.unsubscribe(sub),
        },
        type,
        id,
      ),
    );
  }

  /** Ends a subscription (to a job or to a flow) and drops the events it had queued. */
  async unsubscribe(sub: Subscription | FlowSubscription): Promise<void> {
    if (sub instanceof FlowSubscription) return sub.close();
    const hub = this.#subscriptions();
    if (await this.#remote?.unsubscribe(sub)) return;
    return this.#calls.track(hub.unsubscribe(sub));
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
    this.#subscriptions();
    return this.#calls.track(waitForEvent(subs, state, timeoutMs)) as Promise<JobStateChange<T> | 'timeout'>;
  }

  // --- processors ------------------------------------------------------------------

  /**
   * Runs the jobs of `type` with a handler: a scheduler (couch_replicator's,
   * see the processors section of the README) takes them in batches and runs
   * the handler: a function on the main thread's event loop, a
   * `defineHandler` definition or module in a pool of worker threads
   * (`runIn` chooses for a definition). The
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
    await this.#processors.process(type, handler, options);
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
    this.#ended.abort();
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#withdraw();
    await this.#operations.stop();
    this.#remote?.close();
    await this.#hub?.close();
    if (this.#root !== undefined) await this.#root.stop().catch(() => {});
    await this.#processors.close();
    await this.#actors.shutdown();
    await this.#core.closeAll();
    await this.#closeStore();
  }

  /** An owner of a shared store stops serving the other processes before anything else closes (see StoreSharing.withdraw). */
  async #withdraw(): Promise<void> {
    if (this.#ownsStore && 'sharing' in this.#store) await this.#store.sharing.withdraw();
  }

  async #closeStore(): Promise<void> {
    if (!this.#ownsStore) return;
    if ('sharing' in this.#store) await this.#store.sharing.close();
    else await this.#store.database.close();
  }

  /**
   * jobs_sup is gone. Unless the app is closing (its root then stops with
   * it), the app stops: OTP stops an application whose top supervisor died.
   */
  #rootExited(reason: ExitReason): void {
    if (this.#closing !== undefined) return;
    const stop = rootExited(SYSTEM_NAMES.root, reason, this.#intensityReached);
    this.#stop = stop;
    this.#ended.abort();
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
      () => this.#withdraw(),
      async () => this.#remote?.close(error),
      async () => this.#hub?.close(error),
      () => this.#processors.close(),
      () => this.#actors.shutdown(),
      () => this.#core.closeAll(),
      // Last but the store: the answer to the request that killed the root (a kill route) goes out first.
      () => this.#operations.stop(),
      () => this.#closeStore(),
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

  /**
   * Asks the jobs server to check the types now; resolves with the types it
   * watches. In a client of a shared store, the owner's jobs server (it runs
   * the activity monitors and notifiers of the store).
   */
  async #checkTypes(): Promise<string[]> {
    // A check is safe to make twice: one whose owner went away is made again on the next (this process, maybe).
    while (this.role === 'client' && 'sharing' in this.#store) {
      const connection = await this.#store.sharing.connection();
      if (connection === undefined) break;
      try {
        return (await connection.call('checkTypes', [])) as string[];
      } catch (error) {
        // An owner that opened the store with openJobs runs no periodic actors: nothing to start.
        if (JobsError.is(error, 'unavailable')) return [];
        if (!JobsError.is(error, 'owner_lost')) throw error;
      }
    }
    return this.#actors.call<string[], JobsServerMessage>(SYSTEM_NAMES.server, { type: 'check_types' }, 30_000);
  }

  /**
   * Shares the store with the other processes that open it: serves them the
   * jobs API, subscriptions and type checks whenever this process owns the
   * store, reaches the owner's subscriptions while it does not, and starts
   * the periodic actors (activity monitors, notifiers) when it takes the
   * store over.
   */
  #share(sharing: StoreSharing, hubOptions: ConstructorParameters<typeof SubscriptionHub>[1]): void {
    this.#remote = new RemoteSubscriptions(sharing);
    for (const [name, method] of servedJobsCalls(() => {
      const handle = (this.#core.current as { handle?: Jobs }).handle;
      if (handle === undefined) throw new JobsError('not_owner', 'this process does not own the store any more');
      return handle;
    })) {
      sharing.serve(name, method);
    }
    for (const [name, method] of servedAppCalls(this.#actors, hubOptions, () => this.#checkTypes())) sharing.serve(name, method);
    sharing.startServing();
    const off = sharing.onRoleChange((change) => {
      if (this.#closing !== undefined || this.#stop !== undefined) return;
      if (change.role === 'owner') {
        this.#operations.logger.warn({ pid: process.pid }, 'the owner of the shared store went away: this process owns the store now');
        void this.#checkTypes().catch((error: unknown) => this.#operations.logger.error({ err: error }, 'starting the periodic actors of the store failed'));
      } else {
        this.#operations.logger.info({ ownerPid: change.ownerPid }, 'connected to the new owner of the shared store');
      }
    });
    this.#ended.signal.addEventListener('abort', off, { once: true });
  }

  /** A call of the jobs API on the core's current handle, rejected with `app_stopped` should the root die first. */
  async #call<R>(work: (jobs: Jobs) => Promise<R>): Promise<R> {
    return this.#calls.track(work(this.jobs));
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
}
