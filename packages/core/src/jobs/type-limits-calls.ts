// The type limits calls of a `Jobs` handle (jobs.ts): a type's concurrency
// and rate, kept in the store (see type-limits.ts).

import type { HandleContext } from './handle-context.js';
import { checkTypeLimits, readTypeLimits, writeTypeLimits } from './type-limits.js';
import type { TypeLimits } from './type-limits.js';

/** The type limits calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class TypeLimitsCalls {
  readonly #handle: HandleContext;

  constructor(handle: HandleContext) {
    this.#handle = handle;
  }

  async setTypeLimits(type: string, limits: TypeLimits | null): Promise<void> {
    const keys = this.#handle.typeKeys(type);
    const checked = checkTypeLimits(limits);
    await this.#handle.run((tx) => writeTypeLimits(tx, keys, checked));
  }

  async getTypeLimits(type: string): Promise<TypeLimits | undefined> {
    const keys = this.#handle.typeKeys(type);
    return this.#handle.run((tx) => readTypeLimits(tx, keys));
  }
}
