// Re-creates couch_jobs and couch_jobs_fdb with the final couch_jobs
// semantics: the transactional jobs API.
//
// Every public method is one storage transaction (or, for bulk operations,
// a series of bounded ones), and every transaction body only computes from
// what it reads, so the storage retry loop may run it again safely. Writes
// and accepts made at the same time share transactions (write-batcher.ts,
// accept-batcher.ts); each call still gets its own answer. An accept left
// waiting is served by the write that enqueues its job, in that write's
// transaction (parked-accepts.ts). The class is the API: it checks the
// arguments and runs the single writes itself, and hands accepts to
// AcceptCalls (accept-calls.ts), the batch writes to BatchCalls
// (batch-calls.ts), the reads to ReadCalls (read-calls.ts), the type
// timeouts to TypeTimeoutCalls (type-timeout-calls.ts) and the activity
// calls to ActivityCalls (activity-calls.ts).
// It is one long file because it is the whole public surface of the jobs
// API, one short method per call (arguments checked, then handed on); the
// work lives in the modules named above.
//
// Over 500 lines for one reason: this is the public class, every method of
// the API with its documentation, and a class's methods cannot be spread
// over files; what is left here besides them is the single writes' hot path.

import { JobsError } from '../errors.js';
import type { Database, Transaction, Watch } from '../storage/interfaces.js';
import type { Versionstamp } from '../keys/versionstamp.js';
import { MAX_ACCEPT_MANY } from './accept-batcher.js';
import { AcceptCalls } from './accept-calls.js';
import { ActivityCalls } from './activity-calls.js';
import { BatchCalls } from './batch-calls.js';
import { type AdaptiveBatchSize, runBatch } from './batch-size.js';
import { FINISH_COUNTED } from './counted-finish.js';
import { closedError } from './handle-context.js';
import type { HandleContext } from './handle-context.js';
import {
  ADD_OPTIONS,
  FAIL_ATTEMPT_OPTIONS,
  NEW_JOBS_OPTIONS,
  RESUBMIT_OPTIONS,
  WORKER_RESUBMIT_OPTIONS,
  checkId,
  checkJobScheduledTime,
  checkJobShape,
  checkOptions,
  checkPriority,
  checkType,
  describe,
  isDatabaseLike,
} from './job-input.js';
import { JobKeys } from './job-keys.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome, JobState } from './job-record.js';
import { checkPruneArguments, MAX_PRUNE_BATCH, pruneFinished } from './prune-finished.js';
import type { PruneLimits, PruneOptions, PruneResult } from './prune-finished.js';
import { flagOwnJob, removeJob, resubmitJob } from './job-operations.js';
import { cancelJob, retryJob } from './job-outcomes.js';
import { addFlowIn, checkFlow, readFlow, readFlowChildren } from './job-flows.js';
import type { FlowAdded, FlowChild, FlowNode, FlowSpec } from './job-flows.js';
import { JobsInTransaction } from './jobs-in-transaction.js';
import type { JobsContext } from './jobs-in-transaction.js';
import { ParkedAccepts } from './parked-accepts.js';
import { ReadCalls } from './read-calls.js';
import { SettleTurn } from './settle-turn.js';
import { TypeTimeoutCalls } from './type-timeout-calls.js';
import { TypeLimitsCalls } from './type-limits-calls.js';
import { checkJobsClock, type JobsClock, systemJobsClock } from './jobs-clock.js';
import type { TypeLimits } from './type-limits.js';
import { type PausedType, TypePauseCalls } from './type-pauses.js';
import { type ScheduleInput, type ScheduleRecord, ScheduleCalls } from './schedules.js';
import { WriteBatcher } from './write-batcher.js';
import type { WriteCounter, WriteRequest } from './write-requests.js';
import {
  addRequest,
  completeRequest,
  failAttemptRequest,
  failRequest,
  finishRequest,
  jobChanges,
  updateRequest,
  writeBytes,
} from './write-calls.js';
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
} from './interfaces.js';

/**
 * The jobs API on a database this process runs transactions on. `Jobs` is
 * the name to use: the value is this class, and the type is its public
 * surface, which a process that reaches an embedded store through its
 * owner (SharedJobs) has too.
 */
export class JobsHandle {
  readonly #database: Database;
  readonly #ownsDatabase: boolean;
  readonly #keys = new JobKeys();
  /** Accepts waiting for a job, which this handle's writes serve. */
  readonly #parked: ParkedAccepts;
  readonly #writes: WriteBatcher;
  readonly #accepts: AcceptCalls;
  readonly #activity: ActivityCalls;
  readonly #reads: ReadCalls;
  readonly #batches: BatchCalls;
  readonly #typeTimeouts: TypeTimeoutCalls;
  readonly #typeLimits: TypeLimitsCalls;
  readonly #pauses: TypePauseCalls;
  readonly #schedules: ScheduleCalls;
  /** Turns in which this handle's batchers answered calls (see SettleTurn). */
  readonly #turn = new SettleTurn();
  /** The view of each application transaction given to `in()`: one per transaction. */
  readonly #views = new WeakMap<Transaction, JobsInTransaction>();
  readonly #context: JobsContext;
  #closed = false;

  /**
   * Prefer {@link openJobs}. `ownsDatabase`: whether `close()` also closes
   * `database`. @default false. `clock`: what rate limits count on (see
   * JobsClock). @default the system clock
   */
  constructor(database: Database, options: { ownsDatabase?: boolean; clock?: JobsClock } = {}) {
    if (!isDatabaseLike(database)) {
      throw new JobsError('invalid_option', `Jobs runs on an open Database (from openDatabase), got ${describe(database)}`);
    }
    this.#database = database;
    const checked = checkOptions(options, NEW_JOBS_OPTIONS);
    this.#ownsDatabase = checked.ownsDatabase === true;
    const clock = checkJobsClock(checked.clock) ?? systemJobsClock;
    this.#parked = new ParkedAccepts(clock);
    this.#writes = new WriteBatcher(database, this.#turn, this.#parked, this.#failureOf);
    this.#context = {
      typeKeys: (type) => this.#typeKeys(type),
      changes: jobChanges,
    };
    const handle: HandleContext = {
      database,
      isClosed: () => this.#closed,
      checkOpen: () => this.#checkOpen(),
      failure: (error) => this.#failure(error),
      typeKeys: (type) => this.#typeKeys(type),
      jobKeys: (job) => this.#jobKeys(job),
      run: (body) => this.#run(body),
      runBatch: (size, body) => this.#runBatch(size, body),
      clock,
    };
    this.#accepts = new AcceptCalls(handle, this.#parked, this.#turn);
    this.#activity = new ActivityCalls(handle);
    this.#reads = new ReadCalls(handle, this.#keys);
    this.#batches = new BatchCalls(handle, this.#writes);
    this.#typeTimeouts = new TypeTimeoutCalls(handle, this.#keys);
    this.#typeLimits = new TypeLimitsCalls(handle);
    this.#pauses = new TypePauseCalls(handle, this.#keys);
    this.#schedules = new ScheduleCalls(handle, this.#keys, (tx) => this.in(tx));
  }

  /** The database this handle runs its transactions on. */
  get database(): Database {
    return this.#database;
  }

  /**
   * `owner`: this process runs the store's transactions itself (always for
   * a handle on a database; see SharedJobs for `client`).
   */
  get role(): StoreRole {
    return 'owner';
  }

  /** The pid of the process that runs the store's transactions: this one. */
  get ownerPid(): number {
    return process.pid;
  }

  /**
   * The jobs API inside `tx`, a transaction of this handle's database that
   * the application runs (`jobs.database.doTransaction(async (tx) => …)`):
   * what it writes commits with the application's own writes, or not at
   * all, and wakes waiters only once that transaction commits. Safe to
   * call again when the application's body is retried.
   */
  in(tx: Transaction): JobsInTransaction {
    this.#checkOpen();
    if (typeof tx !== 'object' || tx === null || typeof (tx as { get?: unknown }).get !== 'function') {
      throw new JobsError('invalid_option', `in() takes a transaction of this handle's database, got ${describe(tx)}`);
    }
    let view = this.#views.get(tx);
    if (view === undefined) {
      view = new JobsInTransaction(tx, this.#context);
      this.#views.set(tx, view);
    }
    return view;
  }

  // --- type timeouts -------------------------------------------------------

  /** Sets the activity timeout of a type; required before `add` for it. */
  setTypeTimeout(type: string, seconds: number): Promise<void> {
    return this.#typeTimeouts.setTypeTimeout(type, seconds);
  }

  /** The activity timeout of a type in seconds, or `undefined` when it has none. */
  getTypeTimeout(type: string): Promise<number | undefined> {
    return this.#typeTimeouts.getTypeTimeout(type);
  }

  /** Removes a type's timeout: later `add`s of that type fail with `no_type_timeout`; its jobs stay. */
  clearTypeTimeout(type: string): Promise<void> {
    return this.#typeTimeouts.clearTypeTimeout(type);
  }

  /** Types that have a timeout, in key order. */
  getTypes(): Promise<string[]> {
    return this.#typeTimeouts.getTypes();
  }

  // --- type limits ---------------------------------------------------------

  /**
   * Sets a type's limits, across every process and node of the store: at
   * most `concurrency` jobs running at once, at most `rate.max` starts per
   * window of `rate.perMs` ms; `null` lifts them. `invalid_limits` for
   * anything else.
   */
  setTypeLimits(type: string, limits: TypeLimits | null): Promise<void> {
    return this.#typeLimits.setTypeLimits(type, limits);
  }

  /** A type's limits, or `undefined` when it has none. */
  getTypeLimits(type: string): Promise<TypeLimits | undefined> {
    return this.#typeLimits.getTypeLimits(type);
  }

  // --- pausing -------------------------------------------------------------

  /**
   * Pauses a type in the store: from the commit on, no take (`accept`,
   * `acceptMany`, a local queue's, a processor's) in any process starts a
   * job of it. Running jobs go on and finish; `add` still adds. Pausing a
   * paused type changes nothing.
   */
  pause(type: string): Promise<void> {
    return this.#pauses.pause(type);
  }

  /** Resumes a paused type: accepts waiting for its jobs wake at once, as for a new job. */
  resume(type: string): Promise<void> {
    return this.#pauses.resume(type);
  }

  /** Whether the type is paused. */
  isPaused(type: string): Promise<boolean> {
    return this.#pauses.isPaused(type);
  }

  /** The paused types, in key order, each with when it was paused (ms since the epoch). */
  getPausedTypes(): Promise<PausedType[]> {
    return this.#pauses.getPausedTypes();
  }

  // --- schedules (recurring jobs; see schedules.ts) --------------------------

  /**
   * Stores the schedule `input.name` (replacing one of that name, which
   * keeps how far its ticks went). The times in it are the caller's: this
   * layer reads no cron expression (the app's `schedule` does).
   */
  setSchedule(input: ScheduleInput): Promise<ScheduleRecord> {
    return this.#schedules.setSchedule(input);
  }

  getSchedule(name: string): Promise<ScheduleRecord | undefined> {
    return this.#schedules.getSchedule(name);
  }

  /** Every schedule, by name. */
  getSchedules(): Promise<ScheduleRecord[]> {
    return this.#schedules.getSchedules();
  }

  /** Removes a schedule (its ticks' jobs stay). Resolves with whether it existed. */
  removeSchedule(name: string): Promise<boolean> {
    return this.#schedules.removeSchedule(name);
  }

  /**
   * Adds the jobs of a schedule's due ticks not added yet and records how
   * far its ticks went, in one transaction: each tick's job is added once
   * however many processes tick at the same time. Resolves with the ids
   * added, or `undefined` when the schedule is gone or was set again after
   * `setAt`.
   */
  addScheduleTicks(name: string, setAt: number, ticks: readonly number[], upTo: number, nextTick: number | null): Promise<string[] | undefined> {
    return this.#schedules.addScheduleTicks(name, setAt, ticks, upTo, nextTick);
  }

  // --- creation ------------------------------------------------------------

  /**
   * Adds a job, or, when the id exists: a pending job gets the new data,
   * scheduled time and priority; a running job is flagged for resubmission
   * (its data stays its worker's); a finished job is enqueued again.
   * Nothing is written when nothing changes. Resolves with the job's state.
   */
  add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
    // Not `async`: an async wrapper around the write's promise costs a promise and two turns per job.
    try {
      const checked = checkOptions(options, ADD_OPTIONS);
      return this.#write(addRequest(this.#typeKeys(type), id, data, checked));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Adds many jobs of one type, each as `add` would, in as few transactions
   * as the storage limits allow (up to 1,000 jobs or ~2 MB each). Every job
   * is checked before anything is written. Resolves with each job's state,
   * in order. When a job fails in storage (e.g. the type's timeout was
   * cleared meanwhile) the call rejects with that job's error after all
   * others settled: more than one transaction's worth is not atomic.
   */
  addMany<T extends string>(type: T, jobs: readonly JobSpec<T>[]): Promise<JobState[]> {
    return this.#batches.addMany(type, jobs);
  }

  /**
   * Adds a flow in one transaction: a parent job with its children, each
   * of which may have children too. A job with children is added `waiting`
   * (never taken) and becomes pending once they have all ended (see
   * `onChildFailure` for a child that fails); its worker reads their
   * outcomes with `getChildren`. Every job of the flow must be new
   * (`flow_job_exists` otherwise, and nothing is added); `invalid_flow` for
   * a tree that is not one (a job twice, a node its own ancestor, no
   * children, more than 1,000 jobs). Resolves with the root's state.
   */
  addFlow(flow: FlowSpec): Promise<FlowAdded> {
    try {
      const jobs = checkFlow(flow);
      for (const job of jobs) this.#typeKeys(job.type);
      const now = nowSeconds();
      return this.#run((tx) => addFlowIn(tx, jobs, now));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The children of a flow job with their states and outcomes (results, errors), read in one transaction; `[]` for a job with none. */
  getChildren(type: string, id: string): Promise<FlowChild[]> {
    try {
      this.#typeKeys(type);
      checkId(id);
      return this.#run((tx) => readFlowChildren(tx, type, id));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The flow under a job as one tree, read in one transaction: each job's
   * state and outcome, each parent's policy and count of unfinished
   * children, and the root's own parent when it has one; `undefined` for a
   * job in no flow.
   */
  getFlow(type: string, id: string): Promise<FlowNode | undefined> {
    try {
      this.#typeKeys(type);
      checkId(id);
      return this.#run((tx) => readFlow(tx, type, id));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Removes a job. A running job is cancelled: its worker gets `halt` at its
   * next update or finish. Resolves with whether the job existed.
   * A flow job's children that have not ended are removed with it (see
   * `addFlow`).
   */
  async remove(type: string, id: string): Promise<boolean> {
    const keys = this.#typeKeys(type);
    checkId(id);
    return this.#write({
      scope: keys.type,
      id,
      bytes: writeBytes(keys, id, undefined),
      body: (tx, _userVersion, shared) => removeJob(tx, keys, id, shared),
    });
  }

  /**
   * Ends a pending or running job as finished with outcome `cancelled`, its
   * data kept. A running job's worker gets `halt` at its next update or
   * finish, as after `remove`. A flow job's children that have not ended
   * are cancelled with it. Resolves with whether this call ended it
   * (false for a job that had finished already, whatever its outcome);
   * rejects with `not_found` when there is no such job.
   */
  async cancel(type: string, id: string): Promise<boolean> {
    const keys = this.#typeKeys(type);
    checkId(id);
    return this.#write({
      scope: keys.type,
      id,
      bytes: writeBytes(keys, id, undefined),
      body: (tx, _userVersion, shared) => cancelJob(tx, keys, id, shared),
    });
  }

  /**
   * Runs a failed or cancelled job again: it is pending, due now, with its
   * data (the input it was added with, as its worker left it) and its
   * attempts back to 0; its error goes. Rejects with `not_found` when there
   * is no such job and `not_retryable` when it did not end failed or
   * cancelled.
   */
  async retry(type: string, id: string): Promise<void> {
    const keys = this.#typeKeys(type);
    checkId(id);
    const now = nowSeconds();
    return this.#write({
      scope: keys.type,
      id,
      bytes: writeBytes(keys, id, undefined),
      body: (tx, _userVersion, shared) => retryJob(tx, keys, id, now, shared),
    });
  }

  /**
   * Removes finished jobs of `type` that ended as `outcome` beyond `limits`
   * (`maxAgeSeconds`: older than this at `options.now`; `maxCount`: past
   * this many, the oldest), oldest first, at most `options.batchSize` (500)
   * in this call's one transaction. Call it again while it resolves with
   * `more: true`. A type's jobs finished before the store kept its finish
   * index are first given their place in it, a page per call (`indexed`),
   * as if they finished then. Nothing is removed unless it is called: a
   * store keeps its finished jobs as long as nobody prunes them.
   */
  async pruneFinished(type: string, outcome: JobOutcome, limits: PruneLimits, options?: PruneOptions): Promise<PruneResult> {
    const keys = this.#typeKeys(type);
    checkPruneArguments(outcome, limits, options);
    const now = options?.now ?? nowSeconds();
    const batchSize = options?.batchSize ?? MAX_PRUNE_BATCH;
    return this.#run((tx) => pruneFinished(tx, keys, outcome, limits, now, batchSize));
  }

  /**
   * As a job creator, `resubmit(type, id, options)`: a finished job is
   * enqueued again (with new data if given), a pending one gets the new
   * schedule/data, a running one is flagged to run again after it finishes.
   * Rejects with `not_found` when the job does not exist.
   *
   * As a job processor, `resubmit(job, options)`: flags the caller's running
   * job to be enqueued again when it finishes; rejects with `halt` when the
   * job is no longer the caller's. Resolves with the updated handle.
   */
  resubmit(type: string, id: string, options?: ResubmitOptions): Promise<JobState>;
  resubmit(job: Job, options?: WorkerResubmitOptions): Promise<Job>;
  async resubmit(
    typeOrJob: string | Job,
    idOrOptions?: string | WorkerResubmitOptions,
    options?: ResubmitOptions,
  ): Promise<JobState | Job> {
    // Anything but a job handle is taken as a type, so a bad one gets invalid_job_type.
    if (typeof typeOrJob === 'object' && typeOrJob !== null) {
      return this.#resubmitOwnJob(typeOrJob, checkOptions(idOrOptions as WorkerResubmitOptions | undefined, WORKER_RESUBMIT_OPTIONS));
    }
    const keys = this.#typeKeys(typeOrJob);
    const id = checkId(idOrOptions);
    const checked = checkOptions(options, RESUBMIT_OPTIONS);
    const changes = jobChanges(checked.data, checked);
    const now = nowSeconds();
    return this.#write({
      scope: keys.type,
      id,
      bytes: writeBytes(keys, id, changes.data),
      body: (tx, _userVersion, shared) => resubmitJob(tx, keys, id, changes, now, shared),
    });
  }

  // --- monitoring ----------------------------------------------------------

  /** `'waiting' | 'pending' | 'running' | 'finished'` (`waiting`: a flow's parent), or `undefined` for a job that does not exist. */
  getJobState(type: string, id: string): Promise<JobState | undefined> {
    return this.#reads.getJobState(type, id);
  }

  /** The job's data as last written, or `undefined` for a job that does not exist. */
  getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    return this.#reads.getJobData(type, id);
  }

  /** State, data, priority, schedule and flags of a job, read in one transaction. */
  getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    return this.#reads.getJob(type, id);
  }

  /**
   * The state and data of many jobs of one type, read in one transaction
   * (one consistent snapshot): `{ id, state, data }` for each id, in order,
   * with `state` and `data` undefined for a job that does not exist.
   */
  getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    return this.#reads.getJobStates(type, ids);
  }

  /**
   * Every job of `type` (of every type when omitted), in key order; with
   * `filter.outcome`, only the finished jobs that ended so. Large types are
   * read in several transactions of adaptive size, so the result is not one
   * snapshot.
   */
  getJobs(type?: string, filter?: JobsFilter): Promise<JobInfo[]> {
    return this.#reads.getJobs(type, filter);
  }

  /** Folds over the jobs of a type, like `getJobs` without holding them all. */
  foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A, filter?: JobsFilter): Promise<A> {
    return this.#reads.foldJobs(type, fold, initial, filter);
  }

  /** Pending jobs of a type, optionally only those due by `maxSchedTime`, counting at most `limit`. */
  pendingCount(type: string, pendingCountOptions?: PendingCountOptions): Promise<number> {
    return this.#reads.pendingCount(type, pendingCountOptions);
  }

  /** Ids of the running jobs of a type, least recently active first. */
  getActiveJobIds(type: string): Promise<string[]> {
    return this.#activity.getActiveJobIds(type);
  }

  // --- processing ----------------------------------------------------------

  /**
   * Takes the best due job of a type (highest priority, then oldest
   * scheduled time, picked at random among equals) and makes it running
   * under a fresh lock. With no due job it waits up to `timeout` ms for one,
   * then resolves `undefined`.
   */
  async accept<T extends string>(type: T, acceptOptions?: AcceptOptions): Promise<Job<T> | undefined> {
    const [job] = await this.#accepts.take(type, 1, acceptOptions);
    return job as Job<T> | undefined;
  }

  /**
   * Takes up to `max` due jobs of a type in one transaction (at most 1,000,
   * and fewer when their records are large), each as `accept` takes one: its
   * own lock and activity row, picked at random among the front of the
   * queue. With no due job it waits up to `timeout` ms for at least one,
   * then resolves `[]`.
   */
  acceptMany<T extends string>(type: T, max: number, acceptOptions?: AcceptOptions): Promise<Job<T>[]> {
    // Not `async`, as `add`: an async wrapper returning the take's promise costs two more turns of the microtask queue before a woken accept's caller runs.
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) {
      return Promise.reject(new JobsError('invalid_option', `acceptMany's max is an integer >= 1, got ${describe(max)}`));
    }
    return this.#accepts.take(type, Math.min(max, MAX_ACCEPT_MANY), acceptOptions) as Promise<Job<T>[]>;
  }

  /**
   * Records progress on a running job (and replaces its data when `data` is
   * given). Must happen at least once per type timeout, or the activity
   * monitor re-enqueues the job. Rejects with `halt` when the job is no
   * longer the caller's. Resolves with the updated handle, whose `resubmit`
   * tells whether someone asked for the job to run again.
   */
  update<T extends string>(job: Job<T>, data?: JobInputOf<T>): Promise<Job<T>> {
    // Not `async`, as `add`: a bad handle or data still rejects, never throws.
    try {
      return this.#write(updateRequest(this.#jobKeys(job), job, data)) as Promise<Job<T>>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Finishes a running job as couch_jobs does, replacing its data when
   * `data` is given; its outcome is `succeeded` (see `complete` and `fail`
   * to keep the data and store the run's result or error apart). A job
   * flagged for resubmission is enqueued again instead. Rejects with `halt`
   * when the job is no longer the caller's: two workers can never both
   * finish one job. Resolves with the job's new state.
   */
  finish<T extends string>(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    // Not `async`, as `add`: a bad handle or data still rejects, never throws.
    try {
      return this.#write(finishRequest(this.#jobKeys(job), job, data));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Finishes a running job as `succeeded`, keeping its data (the input it
   * was added with, or its worker's last update) and storing `result`, when
   * given, apart from it (`getJob` reads it as `result`). A job flagged for
   * resubmission is enqueued again instead, with its data and no result.
   * Rejects with `halt` when the job is no longer the caller's. Resolves
   * with the job's new state.
   */
  complete<T extends string>(job: Job<T>, result?: unknown): Promise<'pending' | 'finished'> {
    try {
      return this.#write(completeRequest(this.#jobKeys(job), job, result));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Finishes a running job as `failed` (its worker gives it up), keeping
   * its data and storing `error` apart from it (`getJob` reads it as
   * `error`). A job flagged for resubmission is enqueued again instead,
   * with one more failed attempt. Rejects with `halt` when the job is no
   * longer the caller's. Resolves with the job's new state.
   */
  fail<T extends string>(job: Job<T>, error: JobErrorInput): Promise<'pending' | 'finished'> {
    try {
      return this.#write(failRequest(this.#jobKeys(job), job, error));
    } catch (failure) {
      return Promise.reject(failure);
    }
  }

  /**
   * A run of the caller's job failed and the job is to run again later: it
   * is pending from `options.scheduledTime`, with its data, and its failed
   * attempts (`Job.attempts`, `JobInfo.attempts`) one more, or
   * `options.attempts`. The count is the store's, so a restart or another
   * process carries on from it. Rejects with `halt` when the job is no
   * longer the caller's.
   */
  failAttempt<T extends string>(job: Job<T>, options: FailAttemptOptions): Promise<'pending'> {
    try {
      return this.#write(failAttemptRequest(this.#jobKeys(job), job, checkOptions(options, FAIL_ATTEMPT_OPTIONS)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `finish`, telling `counter` once it has settled (see counted-finish.ts). @internal */
  [FINISH_COUNTED](job: Job, data: unknown, counter: WriteCounter): Promise<'pending' | 'finished'> {
    try {
      return this.#write(finishRequest(this.#jobKeys(job), job, data), counter);
    } catch (error) {
      counter.settled();
      return Promise.reject(error);
    }
  }

  /**
   * `update` for many jobs, in as few transactions as the limits allow (one
   * for up to 1,000 small jobs), with the lock check per job: each item gets
   * its own outcome, a stale job its own `halt`, a bad handle or bad data its
   * own `invalid_*` error, and the others commit.
   */
  updateMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<Job<T>>[]> {
    return this.#batches.updateMany(items);
  }

  /** `finish` for many jobs, as {@link updateMany} does `update`. */
  finishMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#batches.finishMany(items);
  }

  /** `complete` for many jobs, as {@link updateMany} does `update`: one outcome each. */
  completeMany<T extends string>(items: readonly CompleteItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#batches.completeMany(items);
  }

  /** `fail` for many jobs, as {@link updateMany} does `update`: one outcome each. */
  failMany<T extends string>(items: readonly FailItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#batches.failMany(items);
  }

  /** Whether the handle says the job was flagged to run again (see {@link Job.resubmit}). */
  isResubmitted(job: Job): boolean {
    const handle = checkJobShape(job);
    checkType(handle.type);
    checkId(handle.id);
    return job.resubmit === true;
  }

  async #resubmitOwnJob(job: Job, options: WorkerResubmitOptions): Promise<Job> {
    const keys = this.#jobKeys(job);
    const priority = checkPriority(options.priority);
    const scheduledTime = checkJobScheduledTime(options.scheduledTime);
    return this.#write({
      scope: keys.type,
      id: job.id,
      bytes: writeBytes(keys, job.id, undefined),
      body: (tx) => flagOwnJob(tx, keys, job, priority, scheduledTime),
    });
  }

  // --- activity (for the activity monitor and the notifiers) ---------------

  /** The type's activity stamp: it changes on every state change of its jobs. */
  getActivityVersionstamp(type: string): Promise<Versionstamp | undefined> {
    return this.#activity.getActivityVersionstamp(type);
  }

  /**
   * The current activity stamp and a watch that fires when it changes, read
   * in one transaction (so no change can be missed between the two).
   */
  watchActivity(type: string): Promise<{ versionstamp: Versionstamp | undefined; watch: Watch }> {
    return this.#activity.watchActivity(type);
  }

  /**
   * How many running jobs of the type were ended by someone other than
   * their worker (removed or cancelled), and a watch that fires when the
   * count changes, read in one transaction. A worker that watches it hears
   * at once that a job it runs may no longer be its own, rather than at its
   * next update; removing or cancelling a pending or finished job does not
   * count.
   */
  watchCancellations(type: string): Promise<{ cancellations: number; watch: Watch }> {
    return this.#activity.watchCancellations(type);
  }

  /**
   * Ids of running jobs accepted or updated at or after the commit of
   * `since`. couch_jobs reads strictly after the stamp; here the rows of one
   * accept batch share a commit and differ only in their user version, so
   * the whole commit counts (as in `getInactiveSince`).
   */
  getActiveSince(type: string, since: Versionstamp): Promise<string[]> {
    return this.#activity.getActiveSince(type, since);
  }

  /** Ids of running jobs not accepted or updated after `since`. */
  getInactiveSince(type: string, since: Versionstamp): Promise<string[]> {
    return this.#activity.getInactiveSince(type, since);
  }

  /**
   * Re-enqueues every running job of a type not accepted or updated after
   * `since` (its worker went silent for a whole timeout): the job becomes
   * pending again and its old worker gets `halt`. Works in batches whose size
   * adapts. Resolves with the re-enqueued ids.
   */
  reEnqueueInactive(type: string, since: Versionstamp, reEnqueueOptions?: ReEnqueueOptions): Promise<string[]> {
    return this.#activity.reEnqueueInactive(type, since, reEnqueueOptions);
  }

  // --- lifecycle -----------------------------------------------------------

  /**
   * Stops blocked accepts and calls that have not reached a transaction
   * (they reject with `closed`; so does a call whose transaction fails
   * because the database closed under it) and closes the database if this
   * handle opened it.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#parked.close();
    this.#accepts.closeBatchers();
    this.#writes.close(() => closedError());
    this.#accepts.wakeWaiting();
    if (this.#ownsDatabase) await this.#database.close();
  }

  // --- internals -----------------------------------------------------------

  #checkOpen(): void {
    if (this.#closed) throw closedError();
  }

  /** What a call rejects with: once the handle is closed, a storage error means "closed". */
  #failure(error: unknown): unknown {
    return this.#closed && !(error instanceof JobsError) ? closedError(error) : error;
  }

  #guarded<T>(promise: Promise<T>): Promise<T> {
    return promise.catch(this.#rethrow);
  }

  /** Shared by every call: no async wrapper or closure per call on the hot path. */
  readonly #rethrow = (error: unknown): never => {
    throw this.#failure(error);
  };

  readonly #failureOf = (error: unknown): unknown => this.#failure(error);

  #typeKeys(type: unknown): TypeKeys {
    this.#checkOpen();
    // Only checked types are cached: a hit needs no second check.
    return this.#keys.cached(type) ?? this.#keys.forType(checkType(type));
  }

  #jobKeys(job: Job): TypeKeys {
    const handle = checkJobShape(job);
    const keys = this.#typeKeys(handle.type);
    checkId(handle.id);
    return keys;
  }

  #run<T>(body: (tx: Transaction) => Promise<T> | T): Promise<T> {
    this.#checkOpen();
    return this.#guarded(this.#database.doTransaction(body));
  }

  #write<T>(request: WriteRequest<T>, counter?: WriteCounter): Promise<T> {
    this.#checkOpen();
    // The batcher rejects with #failure's error itself (#failureOf): no `catch` per call.
    return this.#writes.submit(request, counter);
  }

  #runBatch<T>(size: AdaptiveBatchSize, body: (tx: Transaction, size: number) => Promise<T>): Promise<T> {
    this.#checkOpen();
    return this.#guarded(runBatch(this.#database, size, body));
  }
}

// --- small helpers ---------------------------------------------------------

function nowSeconds(): number {
  return Date.now() / 1000;
}

/** The jobs API, whichever process runs the transactions: see {@link JobsHandle}. */
export type Jobs = Pick<JobsHandle, keyof JobsHandle>;
/** `new Jobs(database)` makes a {@link JobsHandle}. */
export const Jobs = JobsHandle;

/**
 * Whether a process runs an embedded store's transactions itself (`owner`)
 * or sends its calls to the process that does (`client`).
 */
export type StoreRole = 'owner' | 'client';
