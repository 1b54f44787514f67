// The jobs API of a process that shares an embedded store with others on
// one machine. While this process owns the store (see store-sharing.ts),
// every call runs on a jobs handle of its own, as with a plain `Jobs`;
// while another process owns it, every call is sent to that owner, which
// runs it on its own handle and answers with the same value or the same
// typed error. When the owner goes away, this process may become the owner
// itself: the next calls then run here.
//
// Calls that are safe to make twice (reads, type timeouts) are made again
// on the next owner when theirs went away with them in flight, and so are
// `add` and `addMany`, for the jobs that do not exist by then (see
// #remoteAdd); the others reject with JobsError `owner_lost`, since only
// the caller can tell whether a second `finish`, `complete`, `fail`,
// `failAttempt`, `remove`, `cancel`, `retry` or `accept` is what it wants
// (a job is never finished twice either way: the owner checks its lock;
// but a second `cancel` would answer false for the job the first one
// ended, and a second `retry` would run again a job that failed since).
//
// One file over 500 lines because it implements the whole `Jobs` interface,
// each method a few lines: run here, or send and decide what to do when the owner goes.

import { JobsError } from '../errors.js';
import type { Versionstamp } from '../keys/versionstamp.js';
import type { Database, Watch } from '../storage/interfaces.js';
import { FINISH_COUNTED } from '../jobs/counted-finish.js';
import { checkFunction, checkJobShape, checkId, checkType } from '../jobs/job-input.js';
import type { JobOutcome, JobState } from '../jobs/job-record.js';
import type { PruneLimits, PruneOptions, PruneResult } from '../jobs/prune-finished.js';
import type { JobsInTransaction } from '../jobs/jobs-in-transaction.js';
import type { PausedType } from '../jobs/type-pauses.js';
import type { ScheduleInput, ScheduleRecord } from '../jobs/schedules.js';
import { checkFlow } from '../jobs/job-flows.js';
import type { FlowAdded, FlowChild, FlowNode, FlowSpec } from '../jobs/job-flows.js';
import { type Jobs, JobsHandle, type StoreRole } from '../jobs/jobs.js';
import type { JobsClock } from '../jobs/jobs-clock.js';
import type { WriteCounter } from '../jobs/write-requests.js';
import type {
  AcceptOptions,
  AddOptions,
  CompleteItem,
  FailAttemptOptions,
  FailItem,
  Job,
  JobDataOf,
  JobErrorInput,
  JobInfo,
  JobInputOf,
  JobsFilter,
  JobSpec,
  JobStateEntry,
  PendingCountOptions,
  ReEnqueueOptions,
  ResubmitOptions,
  Settled,
  WorkerItem,
  WorkerResubmitOptions,
} from '../jobs/interfaces.js';
import { checkJobsFilter } from '../jobs/read-calls.js';
import { checkTypeLimits } from '../jobs/type-limits.js';
import type { TypeLimits } from '../jobs/type-limits.js';
import {
  checkAccept,
  checkAcceptMany,
  checkAdd,
  checkAddMany,
  crossingCompleteItem,
  crossingWorkerItem,
  endingHandle,
  checkFailAttempt,
  checkFailItem,
  checkJobFail,
  checkJobWrite,
  checkPrune,
  checkResubmit,
  checkWorkerItem,
} from './crossing-checks.js';
import { type WireSettled, fromWireSettled, watchChannel } from './served-jobs-calls.js';
import type { OwnerConnection } from './owner-connection.js';
import type { StoreSharing } from './store-sharing.js';

/** A method of the jobs API by name, as it crosses. */
type JobsMethod = Extract<keyof Jobs, string>;

/** Made again on the next owner when theirs goes away: the same call twice has the effect of once. */
const RETRIED = true;

/** The batch calls: each item's error crosses apart, and a bad item is refused on its own. */
type BatchMethod = 'updateMany' | 'finishMany' | 'completeMany' | 'failMany';
const BATCH_METHODS: ReadonlySet<string> = new Set<BatchMethod>(['updateMany', 'finishMany', 'completeMany', 'failMany']);

export class SharedJobs implements Jobs {
  readonly #sharing: StoreSharing;
  readonly #ownsSharing: boolean;
  readonly #clock: JobsClock | undefined;
  /** This process's handle on the store, while it owns it. */
  #local: JobsHandle | undefined;
  #closed = false;

  /** @param ownsSharing whether `close()` also closes `sharing` (gives the store up) */
  /** `clock`: what rate limits count on while this process owns the store (see JobsClock). */
  constructor(sharing: StoreSharing, options: { ownsSharing?: boolean; clock?: JobsClock } = {}) {
    this.#sharing = sharing;
    this.#ownsSharing = options.ownsSharing === true;
    this.#clock = options.clock;
  }

  /** `owner` while this process runs the store's transactions, `client` while it sends its calls to the owner. */
  get role(): StoreRole {
    return this.#sharing.role;
  }

  /** The pid of the process that owns the store now (this one's, as owner). */
  get ownerPid(): number {
    return this.#sharing.ownerPid;
  }

  /** The database, in the owner; JobsError `not_owner` in a client (its transactions run in the owner). */
  get database(): Database {
    return this.#owned('database').database;
  }

  /**
   * This process's own handle on the store while it owns it (the one the
   * other processes' calls run on), or undefined in a client.
   */
  get handle(): JobsHandle | undefined {
    if (this.#closed) return undefined;
    const database = this.#sharing.database;
    if (database === undefined) return undefined;
    if (this.#local === undefined || this.#local.database !== database) {
      this.#local = new JobsHandle(database, this.#clock === undefined ? {} : { clock: this.#clock });
    }
    return this.#local;
  }

  /**
   * The jobs API inside a transaction of the store: only in the owner. In a
   * client it throws JobsError `not_owner`: a transaction cannot span two
   * processes, so add the jobs with `add` (atomic on its own) or in the owner.
   */
  in(tx: Parameters<Jobs['in']>[0]): JobsInTransaction {
    return this.#owned('in(tx)').in(tx);
  }

  // --- type timeouts -------------------------------------------------------

  setTypeTimeout(type: string, seconds: number): Promise<void> {
    return this.#run('setTypeTimeout', [type, seconds], RETRIED) as Promise<void>;
  }

  getTypeTimeout(type: string): Promise<number | undefined> {
    return this.#run('getTypeTimeout', [type], RETRIED) as Promise<number | undefined>;
  }

  clearTypeTimeout(type: string): Promise<void> {
    return this.#run('clearTypeTimeout', [type], RETRIED) as Promise<void>;
  }

  getTypes(): Promise<string[]> {
    return this.#run('getTypes', [], RETRIED) as Promise<string[]>;
  }

  // --- type limits ---------------------------------------------------------

  setTypeLimits(type: string, limits: TypeLimits | null): Promise<void> {
    return this.#remoteChecked(() => checkTypeLimits(limits), 'setTypeLimits', [type, limits], RETRIED) as Promise<void>;
  }

  getTypeLimits(type: string): Promise<TypeLimits | undefined> {
    return this.#run('getTypeLimits', [type], RETRIED) as Promise<TypeLimits | undefined>;
  }

  // --- pausing -------------------------------------------------------------

  pause(type: string): Promise<void> {
    return this.#run('pause', [type], RETRIED) as Promise<void>;
  }

  resume(type: string): Promise<void> {
    return this.#run('resume', [type], RETRIED) as Promise<void>;
  }

  isPaused(type: string): Promise<boolean> {
    return this.#run('isPaused', [type], RETRIED) as Promise<boolean>;
  }

  getPausedTypes(): Promise<PausedType[]> {
    return this.#run('getPausedTypes', [], RETRIED) as Promise<PausedType[]>;
  }

  // --- schedules -----------------------------------------------------------

  setSchedule(input: ScheduleInput): Promise<ScheduleRecord> {
    return this.#run('setSchedule', [input], RETRIED) as Promise<ScheduleRecord>;
  }

  getSchedule(name: string): Promise<ScheduleRecord | undefined> {
    return this.#run('getSchedule', [name], RETRIED) as Promise<ScheduleRecord | undefined>;
  }

  getSchedules(): Promise<ScheduleRecord[]> {
    return this.#run('getSchedules', [], RETRIED) as Promise<ScheduleRecord[]>;
  }

  removeSchedule(name: string): Promise<boolean> {
    return this.#run('removeSchedule', [name], !RETRIED) as Promise<boolean>;
  }

  addScheduleTicks(name: string, setAt: number, ticks: readonly number[], upTo: number, nextTick: number | null): Promise<string[] | undefined> {
    // Made again on a new owner: a tick already added is not added twice.
    return this.#run('addScheduleTicks', [name, setAt, ticks, upTo, nextTick], RETRIED) as Promise<string[] | undefined>;
  }

  // --- creation ------------------------------------------------------------

  add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
    const local = this.handle;
    if (local !== undefined) return local.add(type, id, data, options);
    try {
      checkAdd(type, id, data, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#remoteAdd(type, id, data, options);
  }

  addMany<T extends string>(type: T, jobs: readonly JobSpec<T>[]): Promise<JobState[]> {
    const local = this.handle;
    if (local !== undefined) return local.addMany(type, jobs);
    try {
      checkAddMany(type, jobs);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#remoteAddMany(type, jobs);
  }

  addFlow(flow: FlowSpec): Promise<FlowAdded> {
    const local = this.handle;
    if (local !== undefined) return local.addFlow(flow);
    // Not made again on a next owner: a flow that was added would answer `flow_job_exists`.
    return this.#remoteChecked(() => checkFlow(flow), 'addFlow', [flow], !RETRIED) as Promise<FlowAdded>;
  }

  getChildren(type: string, id: string): Promise<FlowChild[]> {
    return this.#run('getChildren', [type, id], RETRIED) as Promise<FlowChild[]>;
  }

  getFlow(type: string, id: string): Promise<FlowNode | undefined> {
    return this.#run('getFlow', [type, id], RETRIED) as Promise<FlowNode | undefined>;
  }

  remove(type: string, id: string): Promise<boolean> {
    return this.#run('remove', [type, id], !RETRIED) as Promise<boolean>;
  }

  cancel(type: string, id: string): Promise<boolean> {
    return this.#run('cancel', [type, id], !RETRIED) as Promise<boolean>;
  }

  retry(type: string, id: string): Promise<void> {
    return this.#run('retry', [type, id], !RETRIED) as Promise<void>;
  }

  pruneFinished(type: string, outcome: JobOutcome, limits: PruneLimits, options?: PruneOptions): Promise<PruneResult> {
    const local = this.handle;
    if (local !== undefined) return local.pruneFinished(type, outcome, limits, options);
    // Made again on a next owner: a prune removes what is beyond the policy then, which is what was asked.
    const check = (): void => checkPrune(type, outcome, limits, options);
    return this.#remoteChecked(check, 'pruneFinished', [type, outcome, limits, options], RETRIED) as Promise<PruneResult>;
  }

  resubmit(type: string, id: string, options?: ResubmitOptions): Promise<JobState>;
  resubmit(job: Job, options?: WorkerResubmitOptions): Promise<Job>;
  resubmit(typeOrJob: string | Job, idOrOptions?: string | WorkerResubmitOptions, options?: ResubmitOptions): Promise<JobState | Job> {
    const local = this.handle;
    if (local !== undefined) {
      if (typeof typeOrJob === 'object' && typeOrJob !== null) return local.resubmit(typeOrJob, idOrOptions as WorkerResubmitOptions | undefined);
      return local.resubmit(typeOrJob, idOrOptions as string, options);
    }
    if (typeof typeOrJob === 'object' && typeOrJob !== null) return this.#remote('resubmit', [typeOrJob, idOrOptions], !RETRIED) as Promise<Job>;
    const check = (): void => checkResubmit(typeOrJob, idOrOptions, options);
    return this.#remoteChecked(check, 'resubmit', [typeOrJob, idOrOptions, options], !RETRIED) as Promise<JobState>;
  }

  // --- monitoring ----------------------------------------------------------

  getJobState(type: string, id: string): Promise<JobState | undefined> {
    return this.#run('getJobState', [type, id], RETRIED) as Promise<JobState | undefined>;
  }

  getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    return this.#run('getJobData', [type, id], RETRIED) as Promise<JobDataOf<T> | undefined>;
  }

  getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    return this.#run('getJob', [type, id], RETRIED) as Promise<JobInfo<T> | undefined>;
  }

  getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    return this.#run('getJobStates', [type, ids], RETRIED) as Promise<JobStateEntry[]>;
  }

  getJobs(type?: string, filter?: JobsFilter): Promise<JobInfo[]> {
    const local = this.handle;
    if (local !== undefined) return local.getJobs(type, filter);
    if (filter === undefined) return this.#remote('getJobs', type === undefined ? [] : [type], RETRIED) as Promise<JobInfo[]>;
    return this.#remoteChecked(() => checkJobsFilter(filter), 'getJobs', [type, filter], RETRIED) as Promise<JobInfo[]>;
  }

  /** In a client, the jobs come over in one answer and are folded here. */
  async foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A, filter?: JobsFilter): Promise<A> {
    const local = this.handle;
    if (local !== undefined) return local.foldJobs(type, fold, initial, filter);
    checkFunction(fold, "foldJobs' fold");
    checkJobsFilter(filter);
    checkType(type);
    let accumulator = initial;
    const args = filter === undefined ? [type] : [type, filter];
    for (const job of (await this.#remote('getJobs', args, RETRIED)) as JobInfo[]) accumulator = fold(accumulator, job);
    return accumulator;
  }

  pendingCount(type: string, options?: PendingCountOptions): Promise<number> {
    return this.#run('pendingCount', [type, options], RETRIED) as Promise<number>;
  }

  getActiveJobIds(type: string): Promise<string[]> {
    return this.#run('getActiveJobIds', [type], RETRIED) as Promise<string[]>;
  }

  // --- processing ----------------------------------------------------------

  accept<T extends string>(type: T, options?: AcceptOptions): Promise<Job<T> | undefined> {
    const local = this.handle;
    if (local !== undefined) return local.accept(type, options);
    return this.#remoteAccept(() => checkAccept(type, options), 'accept', [type], options, undefined) as Promise<Job<T> | undefined>;
  }

  acceptMany<T extends string>(type: T, max: number, options?: AcceptOptions): Promise<Job<T>[]> {
    const local = this.handle;
    if (local !== undefined) return local.acceptMany(type, max, options);
    return this.#remoteAccept(() => checkAcceptMany(type, max, options), 'acceptMany', [type, max], options, []) as Promise<Job<T>[]>;
  }

  update<T extends string>(job: Job<T>, data?: JobInputOf<T>): Promise<Job<T>> {
    const local = this.handle;
    if (local !== undefined) return local.update(job, data);
    return this.#remoteChecked(() => checkJobWrite(job, data), 'update', [job, data], !RETRIED) as Promise<Job<T>>;
  }

  finish<T extends string>(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    const local = this.handle;
    if (local !== undefined) return local.finish(job, data);
    return this.#remoteEnding(() => checkJobWrite(job, data), 'finish', job, data) as Promise<'pending' | 'finished'>;
  }

  complete<T extends string>(job: Job<T>, result?: unknown): Promise<'pending' | 'finished'> {
    const local = this.handle;
    if (local !== undefined) return local.complete(job, result);
    return this.#remoteEnding(() => checkJobWrite(job, result), 'complete', job, result) as Promise<'pending' | 'finished'>;
  }

  fail<T extends string>(job: Job<T>, error: JobErrorInput): Promise<'pending' | 'finished'> {
    const local = this.handle;
    if (local !== undefined) return local.fail(job, error);
    let crossing: JobErrorInput;
    try {
      crossing = checkJobFail(job, error);
    } catch (failure) {
      return Promise.reject(failure);
    }
    return this.#remote('fail', [endingHandle(job), crossing], !RETRIED) as Promise<'pending' | 'finished'>;
  }

  failAttempt<T extends string>(job: Job<T>, options: FailAttemptOptions): Promise<'pending'> {
    const local = this.handle;
    if (local !== undefined) return local.failAttempt(job, options);
    return this.#remoteEnding(() => checkFailAttempt(job, options), 'failAttempt', job, options) as Promise<'pending'>;
  }

  /** `finish`, telling `counter` once it has settled. @internal */
  [FINISH_COUNTED](job: Job, data: unknown, counter: WriteCounter): Promise<'pending' | 'finished'> {
    const local = this.handle;
    if (local !== undefined) return local[FINISH_COUNTED](job, data, counter);
    const finishing = this.finish(job, data);
    finishing.then(counter.settled, counter.settled);
    return finishing;
  }

  updateMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<Job<T>>[]> {
    const local = this.handle;
    if (local !== undefined) return local.updateMany(items);
    return this.#remoteBatch('updateMany', items, checkedAsItIs(checkWorkerItem)) as Promise<Settled<Job<T>>[]>;
  }

  finishMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    const local = this.handle;
    if (local !== undefined) return local.finishMany(items);
    return this.#remoteBatch('finishMany', items, crossingWorkerItem) as Promise<Settled<'pending' | 'finished'>[]>;
  }

  completeMany<T extends string>(items: readonly CompleteItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    const local = this.handle;
    if (local !== undefined) return local.completeMany(items);
    return this.#remoteBatch('completeMany', items, crossingCompleteItem) as Promise<Settled<'pending' | 'finished'>[]>;
  }

  failMany<T extends string>(items: readonly FailItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    const local = this.handle;
    if (local !== undefined) return local.failMany(items);
    return this.#remoteBatch('failMany', items, checkFailItem) as Promise<Settled<'pending' | 'finished'>[]>;
  }

  isResubmitted(job: Job): boolean {
    const handle = checkJobShape(job);
    checkType(handle.type);
    checkId(handle.id);
    return job.resubmit === true;
  }

  // --- activity ------------------------------------------------------------

  getActivityVersionstamp(type: string): Promise<Versionstamp | undefined> {
    return this.#run('getActivityVersionstamp', [type], RETRIED) as Promise<Versionstamp | undefined>;
  }

  /** In a client, the owner keeps the watch and pushes its firing; an owner that goes away fires it. */
  async watchActivity(type: string): Promise<{ versionstamp: Versionstamp | undefined; watch: Watch }> {
    const local = this.handle;
    if (local !== undefined) return local.watchActivity(type);
    const connection = await this.#sharing.connection();
    if (connection === undefined) return this.watchActivity(type);
    const { versionstamp, watchId } = (await connection.call('watchActivity', [type])) as { versionstamp: Versionstamp | undefined; watchId: number };
    return { versionstamp, watch: remoteWatch(connection, watchId) };
  }

  /** In a client, the owner keeps the watch and pushes its firing, as for `watchActivity`. */
  async watchCancellations(type: string): Promise<{ cancellations: number; watch: Watch }> {
    const local = this.handle;
    if (local !== undefined) return local.watchCancellations(type);
    const connection = await this.#sharing.connection();
    if (connection === undefined) return this.watchCancellations(type);
    const { cancellations, watchId } = (await connection.call('watchCancellations', [type])) as { cancellations: number; watchId: number };
    return { cancellations, watch: remoteWatch(connection, watchId) };
  }

  getActiveSince(type: string, since: Versionstamp): Promise<string[]> {
    return this.#run('getActiveSince', [type, since], RETRIED) as Promise<string[]>;
  }

  getInactiveSince(type: string, since: Versionstamp): Promise<string[]> {
    return this.#run('getInactiveSince', [type, since], RETRIED) as Promise<string[]>;
  }

  reEnqueueInactive(type: string, since: Versionstamp, options?: ReEnqueueOptions): Promise<string[]> {
    return this.#run('reEnqueueInactive', [type, since, options], !RETRIED) as Promise<string[]>;
  }

  // --- lifecycle -----------------------------------------------------------

  /** Closes this process's handle and, when this handle opened the store, gives the store up (a client takes over). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsSharing) await this.#sharing.withdraw();
    await this.#local?.close();
    if (this.#ownsSharing) await this.#sharing.close();
  }

  // --- internals -------------------------------------------------------------

  #owned(what: string): JobsHandle {
    if (this.#closed) throw new JobsError('closed', 'the jobs handle is closed');
    const local = this.handle;
    if (local !== undefined) return local;
    throw new JobsError(
      'not_owner',
      `${what} needs the store's transactions, and process ${this.#sharing.ownerPid} owns the store: use the jobs API's calls (each one is atomic), or run this in the owner`,
    );
  }

  /** A call on this process's handle when it owns the store, or in the owner. */
  #run(method: JobsMethod, args: unknown[], retried: boolean): Promise<unknown> {
    const local = this.handle;
    if (local !== undefined) return (local[method] as (...rest: unknown[]) => Promise<unknown>)(...args);
    return this.#remote(method, args, retried);
  }

  /**
   * A call in the owner. While the connection is open it goes out in the
   * caller's turn, and its answer resumes the caller in the turn it
   * arrives: for an idle worker, that answer is its next job. Made again on
   * the next owner when `retried` and the owner went away with it.
   */
  #remote(method: JobsMethod, args: unknown[], retried: boolean, signal?: AbortSignal): Promise<unknown> {
    const connection = this.#closed ? undefined : this.#sharing.openConnection;
    if (connection === undefined) return this.#remoteOnNextOwner(method, args, retried, signal);
    const answer = connection.call(method, args, signal);
    if (BATCH_METHODS.has(method)) return answer.then((value) => fromWireSettled(value as WireSettled<unknown>[]));
    if (!retried) return answer;
    return answer.then(undefined, (error: unknown) => {
      if (!JobsError.is(error, 'owner_lost')) throw error;
      return this.#remoteOnNextOwner(method, args, retried, signal);
    });
  }

  /** A call in the owner once there is one again (this process, when it took the store over). */
  async #remoteOnNextOwner(method: JobsMethod, args: unknown[], retried: boolean, signal?: AbortSignal): Promise<unknown> {
    for (;;) {
      if (this.#closed) throw new JobsError('closed', 'the jobs handle is closed');
      const connection = await this.#sharing.connection();
      if (connection === undefined) return this.#run(method, args, retried); // this process took the store over
      try {
        const value = await connection.call(method, args, signal);
        return BATCH_METHODS.has(method) ? fromWireSettled(value as WireSettled<unknown>[]) : value;
      } catch (error) {
        if (!retried || !JobsError.is(error, 'owner_lost')) throw error;
      }
    }
  }

  /** A call in the owner, once `check` passed here: a bad argument rejects the call, as in the owner, and never throws. */
  #remoteChecked(check: () => void, method: JobsMethod, args: unknown[], retried: boolean): Promise<unknown> {
    try {
      check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#remote(method, args, retried);
  }

  /**
   * An accept in the owner, once `check` passed here. Its signal stays here
   * (its abort is sent as a cancel), so one aborted already is seen here:
   * the accept takes nothing and answers `nothing` at once, as in the
   * owner, where the call, sent, would take jobs for a caller that gave up.
   */
  #remoteAccept(
    check: () => AbortSignal | undefined,
    method: 'accept' | 'acceptMany',
    args: unknown[],
    options: AcceptOptions | undefined,
    nothing: undefined | [],
  ): Promise<unknown> {
    let signal: AbortSignal | undefined;
    try {
      signal = check();
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.resolve(nothing);
    return this.#remote(method, [...args, withoutSignal(options)], !RETRIED, signal);
  }

  /**
   * An end of `job`'s run in the owner (`finish`, `complete`,
   * `failAttempt`), once `check` passed here: the job crosses as its ending
   * handle, and the call is never made again on the next owner.
   */
  #remoteEnding(check: () => void, method: JobsMethod, job: Job, argument: unknown): Promise<unknown> {
    try {
      check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#remote(method, [endingHandle(job), argument], !RETRIED);
  }

  /**
   * `add` in the owner. When the owner goes away with it in flight, it may
   * have been committed, and its job taken and even finished since (by a
   * worker of another process): made again as it is, the add would
   * resubmit the job (an add of an existing job does), which would run a
   * second time though its run was never cut off. So it is made again only
   * while the job does not exist; once it does, the add answers its state.
   */
  #remoteAdd(type: string, id: string, data: unknown, options: AddOptions | undefined): Promise<JobState> {
    const adding = this.#remote('add', [type, id, data, options], !RETRIED) as Promise<JobState>;
    return adding.then(undefined, (error: unknown) => this.#addAfterLoss(error, type, id, data, options));
  }

  /** After `add` failed with `error`: made again while the job does not exist, when the owner went away with it (see #remoteAdd). */
  async #addAfterLoss(error: unknown, type: string, id: string, data: unknown, options: AddOptions | undefined): Promise<JobState> {
    if (!JobsError.is(error, 'owner_lost')) throw error;
    const state = await this.getJobState(type, id);
    return state ?? this.#remoteAdd(type, id, data, options);
  }

  /** `addMany` in the owner; after the owner's loss, the jobs that exist are left as they are, as in #remoteAdd. */
  async #remoteAddMany(type: string, specs: readonly JobSpec[]): Promise<JobState[]> {
    try {
      return (await this.#remote('addMany', [type, specs], !RETRIED)) as JobState[];
    } catch (error) {
      if (!JobsError.is(error, 'owner_lost')) throw error;
    }
    const existing = await this.getJobStates(type, specs.map((spec) => spec.id));
    const absent = specs.filter((_spec, index) => existing[index]?.state === undefined);
    const added = absent.length === 0 ? [] : await this.#remoteAddMany(type, absent);
    let next = 0;
    return existing.map((entry) => entry.state ?? (added[next++] as JobState));
  }

  /**
   * A batch call in the owner, with the items the owner would refuse refused
   * here, each with its own error; `crossing` checks an item and answers it
   * as it is to cross.
   */
  async #remoteBatch<I>(method: BatchMethod, items: readonly I[], crossing: (item: I) => I): Promise<Settled<unknown>[]> {
    if (!Array.isArray(items)) return this.#remote(method, [items], !RETRIED) as Promise<Settled<unknown>[]>;
    const refused = new Map<number, Error>();
    const sent: I[] = [];
    items.forEach((item, index) => {
      try {
        sent.push(crossing(item));
      } catch (error) {
        if (!(error instanceof JobsError)) throw error;
        refused.set(index, error);
      }
    });
    if (refused.size === 0) return this.#remote(method, [sent], !RETRIED) as Promise<Settled<unknown>[]>;
    const answered = (sent.length === 0 ? [] : await this.#remote(method, [sent], !RETRIED)) as Settled<unknown>[];
    let next = 0;
    return items.map((_item, index) => {
      const reason = refused.get(index);
      return reason !== undefined ? { status: 'rejected', reason } : answered[next++]!;
    });
  }
}

/** An item check that sends the item as the caller gave it. */
/** The owner's watch `watchId`, whose firing it pushes; an owner that goes away fires it. */
function remoteWatch(connection: OwnerConnection, watchId: number): Watch {
  const channel = watchChannel(watchId);
  let settle!: (fired: boolean) => void;
  const promise = new Promise<boolean>((resolve) => {
    settle = resolve;
  });
  connection.listen(channel, (fired) => settle(fired === true));
  // A watch of an owner that went away fires: the caller reads again, from the next owner.
  const offLost = connection.onLost(() => settle(true));
  void promise.then(() => {
    connection.unlisten(channel);
    offLost();
  });
  return {
    promise,
    cancel: () => {
      if (connection.open) void connection.call('cancelWatch', [watchId]).catch(() => {});
      settle(false);
    },
  };
}

function checkedAsItIs<I>(check: (item: I) => void): (item: I) => I {
  return (item) => {
    check(item);
    return item;
  };
}

/** An accept's options as they cross: its signal stays in this process. */
function withoutSignal(options: AcceptOptions | undefined): AcceptOptions | undefined {
  if (options === undefined || !('signal' in options)) return options;
  const { signal: _signal, ...rest } = options;
  return rest;
}
