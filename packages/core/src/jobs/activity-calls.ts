// The activity calls of a `Jobs` handle (jobs.ts), which the activity
// monitor and the notifiers are built on: the type's activity stamp and a
// watch on it, the running jobs by how recently they were active, and the
// re-enqueue of the jobs whose workers went silent; and the count of running
// jobs others ended, with a watch on it, which the schedulers are built on.

import { JobsError } from '../errors.js';
import type { ReadTransaction, Watch } from '../storage/interfaces.js';
import type { KeyRange } from '../keys/subspace.js';
import { type Versionstamp, isVersionstamp, versionstampFromBytes, versionstampToBytes } from '../keys/versionstamp.js';
import { AdaptiveBatchSize } from './batch-size.js';
import type { HandleContext } from './handle-context.js';
import type { ReEnqueueOptions } from './interfaces.js';
import { RE_ENQUEUE_OPTIONS, checkOptions, describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { reEnqueuePage } from './job-transitions.js';

/** The activity calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class ActivityCalls {
  readonly #handle: HandleContext;
  /** Re-enqueue batch sizes adapt per type: types differ in how big their jobs are. */
  readonly #reEnqueueBatches = new Map<string, AdaptiveBatchSize>();

  constructor(handle: HandleContext) {
    this.#handle = handle;
  }

  async getActiveJobIds(type: string): Promise<string[]> {
    const keys = this.#handle.typeKeys(type);
    return this.#handle.run((tx) => activityIds(tx, keys.activity.range()));
  }

  async getActivityVersionstamp(type: string): Promise<Versionstamp | undefined> {
    const keys = this.#handle.typeKeys(type);
    const value = await this.#handle.run((tx) => tx.get(keys.watchesActivity));
    return value === undefined ? undefined : versionstampFromBytes(value);
  }

  async watchActivity(type: string): Promise<{ versionstamp: Versionstamp | undefined; watch: Watch }> {
    const keys = this.#handle.typeKeys(type);
    return this.#handle.run(async (tx) => {
      const value = await tx.get(keys.watchesActivity);
      return {
        versionstamp: value === undefined ? undefined : versionstampFromBytes(value),
        watch: tx.watch(keys.watchesActivity),
      };
    });
  }

  async watchCancellations(type: string): Promise<{ cancellations: number; watch: Watch }> {
    const keys = this.#handle.typeKeys(type);
    return this.#handle.run(async (tx) => {
      const value = await tx.get(keys.watchesCancellations);
      return { cancellations: value === undefined ? 0 : Number(value.readBigUInt64LE(0)), watch: tx.watch(keys.watchesCancellations) };
    });
  }

  async getActiveSince(type: string, since: Versionstamp): Promise<string[]> {
    const keys = this.#handle.typeKeys(type);
    const begin = keys.activityCommitStart(checkVersionstamp(since));
    return this.#handle.run((tx) => activityIds(tx, { begin, end: keys.activity.range().end }));
  }

  async getInactiveSince(type: string, since: Versionstamp): Promise<string[]> {
    const keys = this.#handle.typeKeys(type);
    const end = inactiveEnd(keys, since);
    return this.#handle.run((tx) => activityIds(tx, { begin: keys.activity.range().begin, end }));
  }

  async reEnqueueInactive(type: string, since: Versionstamp, reEnqueueOptions?: ReEnqueueOptions): Promise<string[]> {
    const keys = this.#handle.typeKeys(type);
    const options = checkOptions(reEnqueueOptions, RE_ENQUEUE_OPTIONS);
    const end = inactiveEnd(keys, since);
    if (options.batchSize !== undefined) {
      if (!Number.isSafeInteger(options.batchSize) || options.batchSize < 1) {
        throw new JobsError('invalid_option', `batchSize is an integer >= 1, got ${describe(options.batchSize)}`);
      }
      this.#reEnqueueBatchOf(type).reset(options.batchSize);
    }
    const reEnqueued: string[] = [];
    for (;;) {
      this.#handle.checkOpen();
      const page = await this.#handle.runBatch(this.#reEnqueueBatchOf(type), (tx, size) => reEnqueuePage(tx, keys, end, size));
      reEnqueued.push(...page.ids);
      if (page.done) return reEnqueued;
    }
  }

  #reEnqueueBatchOf(type: string): AdaptiveBatchSize {
    let batch = this.#reEnqueueBatches.get(type);
    if (batch === undefined) {
      batch = new AdaptiveBatchSize({ initial: 100 });
      this.#reEnqueueBatches.set(type, batch);
    }
    return batch;
  }
}

async function activityIds(tx: ReadTransaction, range: KeyRange): Promise<string[]> {
  const rows = await tx.getRange(range.begin, range.end);
  return rows.map((row) => row.value.toString('utf8'));
}

/** The end of the activity range of rows stamped at or before the commit of `since`. */
function inactiveEnd(keys: TypeKeys, since: Versionstamp): Buffer {
  return keys.activityCommitEnd(checkVersionstamp(since));
}

function checkVersionstamp(stamp: unknown): Buffer {
  if (!isVersionstamp(stamp)) {
    throw new JobsError('invalid_versionstamp', `a versionstamp is 24 lowercase hex characters, got ${describe(stamp)}`);
  }
  return versionstampToBytes(stamp);
}
