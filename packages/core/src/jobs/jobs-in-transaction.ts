// The jobs API inside a transaction the application already has (couch_jobs
// takes the caller's transaction object the same way): a job is enqueued,
// removed or finished atomically with the application's own writes, and the
// waiters it wakes (blocked accepts, activity watchers) see it only if that
// transaction commits. Every method only computes from what it reads in the
// transaction, so the application's retry loop may run it again.

import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import { decodeJobData, encodeJobData } from './job-data.js';
import { ADD_OPTIONS, RESUBMIT_OPTIONS, checkArray, checkId, checkJobShape, checkOptions, checkTypeTimeout } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import type { JobState } from './job-record.js';
import { addJob, finishJob, readJobInfo, removeJob, resubmitJob, updateJob } from './job-operations.js';
import { readRecord } from './job-transitions.js';
import type { Changes } from './job-transitions.js';
import type { AddOptions, Job, JobDataOf, JobErrorInput, JobInfo, JobInputOf, JobStateEntry, ResubmitOptions } from './interfaces.js';
import { cancelJob, endJobRead, retryJob } from './job-outcomes.js';
import { withFlowWork } from './job-flows.js';
import { encodeJobError } from './outcome-rows.js';

/** What a view needs from its `Jobs` handle. */
export interface JobsContext {
  /** The checked, cached keys of a type; throws `closed` once the handle is closed. */
  typeKeys(type: unknown): TypeKeys;
  /** Checks and encodes `add`/`resubmit` data and options. */
  changes(data: unknown, options: AddOptions): Changes;
}

/** User versions are 2 bytes; a view hands them out in turn (see {@link JobsInTransaction.update}). */
const USER_VERSIONS = 0x10000;

/**
 * The jobs API on one application transaction; get it with `jobs.in(tx)`.
 * The methods mean what the `Jobs` methods of the same name mean.
 */
export class JobsInTransaction {
  readonly #tx: Transaction;
  readonly #context: JobsContext;
  #userVersion = 0;

  /** @internal */
  constructor(tx: Transaction, context: JobsContext) {
    this.#tx = tx;
    this.#context = context;
  }

  async setTypeTimeout(type: string, seconds: number): Promise<void> {
    const keys = this.#context.typeKeys(type);
    this.#tx.set(keys.typeTimeout, float64(checkTypeTimeout(seconds)));
  }

  async getTypeTimeout(type: string): Promise<number | undefined> {
    const keys = this.#context.typeKeys(type);
    const value = await this.#tx.get(keys.typeTimeout);
    return value === undefined ? undefined : value.readDoubleBE(0);
  }

  async add<T extends string>(type: T, id: string, data?: JobInputOf<T>, options?: AddOptions): Promise<JobState> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    const changes = this.#context.changes(data, checkOptions(options, ADD_OPTIONS));
    return withFlowWork(this.#tx, await addJob(this.#tx, keys, id, changes, Date.now() / 1000));
  }

  async remove(type: string, id: string): Promise<boolean> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    return withFlowWork(this.#tx, await removeJob(this.#tx, keys, id));
  }

  /** Ends a pending or running job as cancelled (see `Jobs.cancel`). */
  async cancel(type: string, id: string): Promise<boolean> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    return withFlowWork(this.#tx, await cancelJob(this.#tx, keys, id));
  }

  /** Runs a failed or cancelled job again (see `Jobs.retry`). */
  async retry(type: string, id: string): Promise<void> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    return withFlowWork(this.#tx, await retryJob(this.#tx, keys, id, Date.now() / 1000));
  }

  /** A job creator's resubmit (`not_found` when the job does not exist). */
  async resubmit(type: string, id: string, options?: ResubmitOptions): Promise<JobState> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    const checked = checkOptions(options, RESUBMIT_OPTIONS);
    return withFlowWork(this.#tx, await resubmitJob(this.#tx, keys, id, this.#context.changes(checked.data, checked), Date.now() / 1000));
  }

  async getJobState(type: string, id: string): Promise<JobState | undefined> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    return (await readRecord(this.#tx, keys, id))?.state;
  }

  async getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    const record = await readRecord(this.#tx, keys, id);
    return record === undefined ? undefined : (decodeJobData(record.data) as JobDataOf<T>);
  }

  async getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    const keys = this.#context.typeKeys(type);
    checkId(id);
    return readJobInfo(this.#tx, keys, id) as Promise<JobInfo<T> | undefined>;
  }

  async getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    const keys = this.#context.typeKeys(type);
    for (const id of checkArray(ids, 'ids')) checkId(id);
    return readJobStates(this.#tx, keys, ids);
  }

  /**
   * A worker's update inside the application's transaction: the progress
   * and the application's writes commit together, or neither does.
   */
  async update<T extends string>(job: Job<T>, data?: JobInputOf<T>): Promise<Job<T>> {
    const keys = this.#jobKeys(job);
    const encoded = data === undefined ? undefined : encodeJobData(data);
    // Each update writes an activity row under this commit's stamp and its
    // own user version; a retried attempt just takes fresh ones.
    const userVersion = this.#userVersion;
    this.#userVersion = (this.#userVersion + 1) % USER_VERSIONS;
    return updateJob(this.#tx, keys, job, encoded, userVersion) as Promise<Job<T>>;
  }

  /** A worker's finish inside the application's transaction (its result is written with the job's end). */
  async finish<T extends string>(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    const keys = this.#jobKeys(job);
    const encoded = data === undefined ? undefined : encodeJobData(data);
    return withFlowWork(this.#tx, await finishJob(this.#tx, keys, job, encoded));
  }

  /** A worker's complete inside the application's transaction (see `Jobs.complete`). */
  async complete<T extends string>(job: Job<T>, result?: unknown): Promise<'pending' | 'finished'> {
    const keys = this.#jobKeys(job);
    const row = result === undefined ? undefined : encodeJobData(result);
    const key = keys.job(job.id);
    return withFlowWork(this.#tx, endJobRead(this.#tx, keys, job, 'succeeded', row, key, await this.#tx.get(key)));
  }

  /** A worker's fail inside the application's transaction (see `Jobs.fail`). */
  async fail<T extends string>(job: Job<T>, error: JobErrorInput): Promise<'pending' | 'finished'> {
    const keys = this.#jobKeys(job);
    const row = encodeJobError(error);
    const key = keys.job(job.id);
    return withFlowWork(this.#tx, endJobRead(this.#tx, keys, job, 'failed', row, key, await this.#tx.get(key)));
  }

  #jobKeys(job: Job): TypeKeys {
    const handle = checkJobShape(job);
    const keys = this.#context.typeKeys(handle.type);
    checkId(handle.id);
    return keys;
  }
}

/** The state and data of each job of `ids`, read in `tx` at once. */
export async function readJobStates(
  tx: ReadTransaction,
  keys: TypeKeys,
  ids: readonly string[],
): Promise<JobStateEntry[]> {
  const records = await Promise.all(ids.map((id) => readRecord(tx, keys, id)));
  return ids.map((id, index) => {
    const record = records[index];
    return record === undefined
      ? { id, state: undefined, data: undefined }
      : { id, state: record.state, data: decodeJobData(record.data) };
  });
}

export function float64(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleBE(value, 0);
  return bytes;
}
