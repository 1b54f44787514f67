// The read calls of a `Jobs` handle (jobs.ts), couch_jobs' monitoring API:
// one job's state, data or whole info, many jobs' states in one snapshot,
// every job of a type (or of all types) read in pages of adaptive size, and
// the count of a type's pending jobs.

import { JobsError } from '../errors.js';
import { AdaptiveBatchSize } from './batch-size.js';
import type { HandleContext } from './handle-context.js';
import type { JobDataOf, JobInfo, JobStateEntry, PendingCountOptions } from './interfaces.js';
import { decodeJobData } from './job-data.js';
import { PENDING_COUNT_OPTIONS, checkArray, checkFunction, checkId, checkOptions, checkScheduledTime, describe } from './job-input.js';
import type { JobKeys } from './job-keys.js';
import { jobInfo, readJobInfo } from './job-operations.js';
import { decodeJobRecord } from './job-record.js';
import type { JobState } from './job-record.js';
import { readRecord } from './job-transitions.js';
import { readJobStates } from './jobs-in-transaction.js';
import { countPendingPage } from './pending-queue.js';

/** The read calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class ReadCalls {
  readonly #handle: HandleContext;
  readonly #keys: JobKeys;
  // One adaptive size per kind of bulk read: they cost differently per item.
  readonly #scanBatch = new AdaptiveBatchSize({ initial: 500 });
  readonly #countBatch = new AdaptiveBatchSize({ initial: 5_000, max: 100_000 });

  constructor(handle: HandleContext, keys: JobKeys) {
    this.#handle = handle;
    this.#keys = keys;
  }

  async getJobState(type: string, id: string): Promise<JobState | undefined> {
    const keys = this.#handle.typeKeys(type);
    checkId(id);
    const record = await this.#handle.run((tx) => readRecord(tx, keys, id));
    return record?.state;
  }

  async getJobData<T extends string>(type: T, id: string): Promise<JobDataOf<T> | undefined> {
    const keys = this.#handle.typeKeys(type);
    checkId(id);
    const record = await this.#handle.run((tx) => readRecord(tx, keys, id));
    return record === undefined ? undefined : (decodeJobData(record.data) as JobDataOf<T>);
  }

  async getJob<T extends string>(type: T, id: string): Promise<JobInfo<T> | undefined> {
    const keys = this.#handle.typeKeys(type);
    checkId(id);
    return this.#handle.run((tx) => readJobInfo(tx, keys, id)) as Promise<JobInfo<T> | undefined>;
  }

  async getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]> {
    const keys = this.#handle.typeKeys(type);
    for (const id of checkArray(ids, 'ids')) checkId(id);
    return this.#handle.run((tx) => readJobStates(tx, keys, ids));
  }

  async getJobs(type?: string): Promise<JobInfo[]> {
    const jobs: JobInfo[] = [];
    await this.#scanJobs(type, (job) => {
      jobs.push(job);
    });
    return jobs;
  }

  async foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A): Promise<A> {
    checkFunction(fold, "foldJobs' fold");
    let accumulator = initial;
    await this.#scanJobs(type, (job) => {
      accumulator = fold(accumulator, job);
    });
    return accumulator;
  }

  async pendingCount(type: string, pendingCountOptions?: PendingCountOptions): Promise<number> {
    const keys = this.#handle.typeKeys(type);
    const options = checkOptions(pendingCountOptions, PENDING_COUNT_OPTIONS);
    const maxScheduledTime = checkScheduledTime(options.maxSchedTime, 'maxSchedTime');
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit !== Number.POSITIVE_INFINITY && !(Number.isSafeInteger(limit) && limit >= 0)) {
      throw new JobsError('invalid_option', `pendingCount's limit is an integer >= 0 or Infinity, got ${describe(limit)}`);
    }
    let count = 0;
    let start: Buffer | undefined = keys.pending.range().begin;
    while (start !== undefined && count < limit) {
      const from: Buffer = start;
      const page = await this.#handle.runBatch(this.#countBatch, (tx, size) =>
        countPendingPage(tx.snapshot(), keys, from, size, maxScheduledTime),
      );
      count += page.count;
      start = page.next;
    }
    return Math.min(count, limit);
  }

  async #scanJobs(type: string | undefined, visit: (job: JobInfo) => void): Promise<void> {
    const subspace = type === undefined ? this.#keys.data : this.#handle.typeKeys(type).data;
    this.#handle.checkOpen();
    const end = subspace.range().end;
    let start: Buffer | undefined = subspace.range().begin;
    while (start !== undefined) {
      const from: Buffer = start;
      // Decoding happens outside the transaction body, so a retried batch
      // never calls `visit` twice.
      const rows = await this.#handle.runBatch(this.#scanBatch, async (tx, size) => {
        const page = await tx.snapshot().getRange(from, end, { limit: size });
        return { page, full: page.length === size };
      });
      for (const row of rows.page) {
        const tuple = subspace.unpack(row.key);
        const jobType = type ?? String(tuple[0]);
        const id = String(type === undefined ? tuple[1] : tuple[0]);
        visit(jobInfo(jobType, id, decodeJobRecord(row.value)));
      }
      const last = rows.page.at(-1);
      start = rows.full && last ? Buffer.concat([last.key, Buffer.of(0)]) : undefined;
    }
  }
}
