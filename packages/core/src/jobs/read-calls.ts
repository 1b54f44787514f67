// The read calls of a `Jobs` handle (jobs.ts), couch_jobs' monitoring API:
// one job's state, data or whole info, many jobs' states in one snapshot,
// every job of a type (or of all types) read in pages of adaptive size, or
// only those that ended with one outcome, and the count of a type's pending
// jobs. A filter on failed or cancelled reads those jobs' outcome rows (every
// such job has one) and not the other jobs at all; a filter on succeeded
// reads the data rows and looks at their headers' outcome bits.

import { JobsError } from '../errors.js';
import { AdaptiveBatchSize } from './batch-size.js';
import type { HandleContext } from './handle-context.js';
import type { JobDataOf, JobInfo, JobsFilter, JobStateEntry, PendingCountOptions } from './interfaces.js';
import { decodeJobData } from './job-data.js';
import {
  JOBS_FILTER,
  PENDING_COUNT_OPTIONS,
  checkArray,
  checkFunction,
  checkId,
  checkOptions,
  checkScheduledTime,
  describe,
} from './job-input.js';
import type { JobKeys } from './job-keys.js';
import { jobInfo, readJobInfo } from './job-operations.js';
import { decodeJobRecord, recordHasOutcomeRow, recordOutcome } from './job-record.js';
import type { JobOutcome, JobState } from './job-record.js';
import type { Subspace } from '../keys/subspace.js';
import { readRecord } from './job-transitions.js';
import { readJobStates } from './jobs-in-transaction.js';
import { countPendingPage } from './pending-queue.js';
import { countGroupedPendingPage } from './job-groups.js';
import type { ReadTransaction } from '../storage/interfaces.js';

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

  async getJobs(type?: string, filter?: JobsFilter): Promise<JobInfo[]> {
    const jobs: JobInfo[] = [];
    await this.#scan(type, filter, (job) => {
      jobs.push(job);
    });
    return jobs;
  }

  async foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A, filter?: JobsFilter): Promise<A> {
    checkFunction(fold, "foldJobs' fold");
    let accumulator = initial;
    await this.#scan(type, filter, (job) => {
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
    // Grouped jobs wait in their groups' queues (job-groups.ts).
    start = keys.groups.pending.range().begin;
    while (start !== undefined && count < limit) {
      const from: Buffer = start;
      const page = await this.#handle.runBatch(this.#countBatch, (tx, size) =>
        countGroupedPendingPage(tx.snapshot(), keys, from, size, maxScheduledTime),
      );
      count += page.count;
      start = page.next;
    }
    return Math.min(count, limit);
  }

  #scan(type: string | undefined, filter: JobsFilter | undefined, visit: (job: JobInfo) => void): Promise<void> {
    const outcome = checkJobsFilter(filter);
    if (outcome === 'failed' || outcome === 'cancelled') return this.#scanOutcomeRows(type, outcome, visit);
    return this.#scanJobs(type, outcome, visit);
  }

  /** The data rows of `type` (of every type when undefined), only those of finished jobs that ended as `outcome` when given. */
  async #scanJobs(type: string | undefined, outcome: JobOutcome | undefined, visit: (job: JobInfo) => void): Promise<void> {
    const subspace = type === undefined ? this.#keys.data : this.#handle.typeKeys(type).data;
    this.#handle.checkOpen();
    const end = subspace.range().end;
    let start: Buffer | undefined = subspace.range().begin;
    while (start !== undefined) {
      const from: Buffer = start;
      // Decoding happens outside the transaction body, so a retried batch
      // never calls `visit` twice. The rows a job keeps apart are read in
      // the page's transaction: the same snapshot as its record.
      const rows = await this.#handle.runBatch(this.#scanBatch, async (tx, size) => {
        const snapshot = tx.snapshot();
        const page = await snapshot.getRange(from, end, { limit: size });
        const jobs: NamedRow[] = [];
        for (const row of page) {
          // The outcome is in the record's header: rows of other outcomes are not decoded at all.
          if (outcome !== undefined && recordOutcome(row.value) !== outcome) continue;
          jobs.push(namedRow(subspace, type, row.key, row.value));
        }
        const apart = await Promise.all(jobs.map((job) => this.#outcomeRowOf(snapshot, job)));
        return { jobs, apart, last: page.at(-1)?.key, full: page.length === size };
      });
      rows.jobs.forEach((job, index) => {
        visit(jobInfo(job.type, job.id, decodeJobRecord(job.value), rows.apart[index]));
      });
      start = rows.full && rows.last ? Buffer.concat([rows.last, Buffer.of(0)]) : undefined;
    }
  }

  /** The jobs that ended failed or cancelled, found by their outcome rows (every such job has one). */
  async #scanOutcomeRows(type: string | undefined, outcome: JobOutcome, visit: (job: JobInfo) => void): Promise<void> {
    const subspace = type === undefined ? this.#keys.outcomes.subspace(outcome) : this.#handle.typeKeys(type).outcomes[outcome];
    this.#handle.checkOpen();
    const end = subspace.range().end;
    let start: Buffer | undefined = subspace.range().begin;
    while (start !== undefined) {
      const from: Buffer = start;
      const rows = await this.#handle.runBatch(this.#scanBatch, async (tx, size) => {
        const snapshot = tx.snapshot();
        const page = await snapshot.getRange(from, end, { limit: size });
        const jobs = page.map((row) => namedRow(subspace, type, row.key, row.value));
        const records = await Promise.all(jobs.map((job) => snapshot.get(this.#keys.forType(job.type).job(job.id))));
        return { jobs, records, last: page.at(-1)?.key, full: page.length === size };
      });
      rows.jobs.forEach((job, index) => {
        const value = rows.records[index];
        if (value === undefined) return;
        const record = decodeJobRecord(value);
        // A row the record does not claim is not this job's outcome (the consistency check reports it).
        if (record.outcome === outcome && record.outcomeRow) visit(jobInfo(job.type, job.id, record, job.value));
      });
      start = rows.full && rows.last ? Buffer.concat([rows.last, Buffer.of(0)]) : undefined;
    }
  }

  /** The value of a data row's outcome row, when its header says it has one. */
  #outcomeRowOf(snapshot: ReadTransaction, job: NamedRow): Promise<Buffer | undefined> | undefined {
    if (!recordHasOutcomeRow(job.value)) return undefined;
    const outcome = recordOutcome(job.value);
    return outcome === undefined ? undefined : snapshot.get(this.#keys.forType(job.type).outcomeKey(outcome, job.id));
  }
}

/** A row of a per-job subspace with the job's type and id read from its key. */
interface NamedRow {
  type: string;
  id: string;
  value: Buffer;
}

/** `key` under `subspace` is (type, id), or (id) when `type` is given. */
function namedRow(subspace: Subspace, type: string | undefined, key: Buffer, value: Buffer): NamedRow {
  const tuple = subspace.unpack(key);
  return { type: type ?? String(tuple[0]), id: String(type === undefined ? tuple[1] : tuple[0]), value };
}

const OUTCOMES: readonly JobOutcome[] = ['succeeded', 'failed', 'cancelled'];

/** A filter of `getJobs`/`foldJobs`: the outcome it asks for, if any. */
export function checkJobsFilter(filter: JobsFilter | undefined): JobOutcome | undefined {
  return checkOutcome(checkOptions(filter, JOBS_FILTER).outcome);
}

function checkOutcome(outcome: unknown): JobOutcome | undefined {
  if (outcome === undefined || OUTCOMES.includes(outcome as JobOutcome)) return outcome as JobOutcome | undefined;
  throw new JobsError('invalid_option', `a jobs filter's outcome is one of ${OUTCOMES.join(', ')}, got ${describe(outcome)}`);
}
