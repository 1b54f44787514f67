// The batch write calls of a `Jobs` handle (jobs.ts): `addMany`,
// `updateMany`, `finishMany`, `completeMany` and `failMany` hand all their
// items to the write batcher at
// once (write-batcher.ts), which runs them in as few transactions as the
// storage limits allow; each item still gets its own outcome.

import { JobsError } from '../errors.js';
import type { HandleContext } from './handle-context.js';
import type { CompleteItem, FailItem, Job, JobSpec, Settled, WorkerItem } from './interfaces.js';
import { COMPLETE_ITEM, FAIL_ITEM, JOB_SPEC_OPTIONS, WORKER_ITEM, checkArray, checkOptions } from './job-input.js';
import type { JobState } from './job-record.js';
import type { WriteBatcher } from './write-batcher.js';
import { addRequest, completeRequest, failRequest, finishRequest, updateRequest } from './write-calls.js';
import type { OptionNames } from '../option-names.js';
import type { WriteRequest } from './write-requests.js';

/** The batch calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class BatchCalls {
  readonly #handle: HandleContext;
  readonly #writes: WriteBatcher;

  constructor(handle: HandleContext, writes: WriteBatcher) {
    this.#handle = handle;
    this.#writes = writes;
  }

  async addMany<T extends string>(type: T, jobs: readonly JobSpec<T>[]): Promise<JobState[]> {
    this.#handle.typeKeys(type);
    // The spec is its own options (jobChanges reads only the option fields): no rest object per job.
    const requests = checkArray(jobs, "addMany's jobs").map((spec) => {
      const checked = checkOptions(spec, JOB_SPEC_OPTIONS);
      return addRequest(this.#handle.typeKeys(type), checked.id, checked.data, checked);
    });
    const outcomes = await this.#guarded(this.#writes.submitAll(requests));
    return outcomes.map((outcome) => {
      if (outcome.status === 'rejected') throw this.#handle.failure(outcome.reason);
      return outcome.value;
    });
  }

  async updateMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<Job<T>>[]> {
    const outcomes = this.#writeMany(items, WORKER_ITEM, (item) => updateRequest(this.#handle.jobKeys(item.job), item.job, item.data));
    return outcomes as Promise<Settled<Job<T>>[]>;
  }

  async finishMany<T extends string>(items: readonly WorkerItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#writeMany(items, WORKER_ITEM, (item) => finishRequest(this.#handle.jobKeys(item.job), item.job, item.data));
  }

  async completeMany<T extends string>(items: readonly CompleteItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#writeMany(items, COMPLETE_ITEM, (item) => completeRequest(this.#handle.jobKeys(item.job), item.job, item.result));
  }

  async failMany<T extends string>(items: readonly FailItem<T>[]): Promise<Settled<'pending' | 'finished'>[]> {
    return this.#writeMany(items, FAIL_ITEM, (item) => failRequest(this.#handle.jobKeys(item.job), item.job, item.error));
  }

  /** Runs the valid items together; an item whose input is bad gets its own error and takes no part. */
  async #writeMany<I extends object, T>(items: readonly I[], names: OptionNames, request: (item: I) => WriteRequest<T>): Promise<Settled<T>[]> {
    this.#handle.checkOpen();
    checkArray(items, 'items');
    const outcomes = new Array<Settled<T>>(items.length);
    const requests: WriteRequest<T>[] = [];
    const positions: number[] = [];
    items.forEach((item, index) => {
      try {
        requests.push(request(checkOptions(item, names)));
        positions.push(index);
      } catch (error) {
        if (!(error instanceof JobsError) || error.code === 'closed') throw error;
        outcomes[index] = { status: 'rejected', reason: error };
      }
    });
    const settled = await this.#guarded(this.#writes.submitAll(requests));
    settled.forEach((outcome, index) => {
      outcomes[positions[index] as number] =
        outcome.status === 'rejected' ? { status: 'rejected', reason: this.#handle.failure(outcome.reason) as Error } : outcome;
    });
    return outcomes;
  }

  #guarded<T>(promise: Promise<T>): Promise<T> {
    return promise.catch(this.#rethrow);
  }

  readonly #rethrow = (error: unknown): never => {
    throw this.#handle.failure(error);
  };
}
