// The type timeout calls of a `Jobs` handle (jobs.ts), couch_jobs'
// set_type_timeout, get_type_timeout, clear_type_timeout and get_types: a
// type's activity timeout, which must be set before jobs of the type are
// added, and the types that have one.

import type { HandleContext } from './handle-context.js';
import { checkTypeTimeout } from './job-input.js';
import type { JobKeys } from './job-keys.js';
import { float64 } from './jobs-in-transaction.js';
import { SCAN_DONE } from './finish-log.js';

/** The type timeout calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class TypeTimeoutCalls {
  readonly #handle: HandleContext;
  readonly #keys: JobKeys;

  constructor(handle: HandleContext, keys: JobKeys) {
    this.#handle = handle;
    this.#keys = keys;
  }

  async setTypeTimeout(type: string, seconds: number): Promise<void> {
    const keys = this.#handle.typeKeys(type);
    const value = float64(checkTypeTimeout(seconds));
    await this.#handle.run(async (tx) => {
      // A type that has never had a job has nothing finished before the
      // finish log existed: nothing for retention to scan (finish-log.ts).
      const scan = await tx.get(keys.finishedScan);
      if (scan === undefined && (await tx.getRange(keys.data.range().begin, keys.data.range().end, { limit: 1 })).length === 0) {
        tx.set(keys.finishedScan, SCAN_DONE);
      }
      tx.set(keys.typeTimeout, value);
    });
  }

  async getTypeTimeout(type: string): Promise<number | undefined> {
    const keys = this.#handle.typeKeys(type);
    const value = await this.#handle.run((tx) => tx.get(keys.typeTimeout));
    return value === undefined ? undefined : value.readDoubleBE(0);
  }

  async clearTypeTimeout(type: string): Promise<void> {
    const keys = this.#handle.typeKeys(type);
    await this.#handle.run((tx) => tx.clear(keys.typeTimeout));
  }

  async getTypes(): Promise<string[]> {
    const subspace = this.#keys.typeTimeouts;
    const rows = await this.#handle.run((tx) => tx.getRange(subspace.range().begin, subspace.range().end));
    return rows.map((row) => String(subspace.unpack(row.key)[0]));
  }
}
