// What the calls of one write attempt share (see write-batcher.ts): the
// reads many of them make of one key, and the writes they need only once.

import type { Transaction } from '../storage/interfaces.js';
import type { TypeKeys } from './job-keys.js';
import type { Handover } from './parked-accepts.js';
import type { OncePerAttempt } from './pending-queue.js';

/**
 * Reads that the calls of one attempt share: a key that many calls read and
 * none writes (a type's timeout, which every add checks) is read once. And
 * the writes they need only once (see OncePerAttempt). Keyed by the
 * identity of the key buffer, which the key caches keep stable.
 */
export class SharedReads implements OncePerAttempt {
  readonly #tx: Transaction;
  readonly #values = new Map<Buffer, Promise<Buffer | undefined>>();
  readonly #written = new Set<Buffer>();
  readonly #handover: Handover | undefined;

  constructor(tx: Transaction, handover?: Handover) {
    this.#tx = tx;
    this.#handover = handover;
  }

  get(key: Buffer): Promise<Buffer | undefined> {
    let value = this.#values.get(key);
    if (value === undefined) {
      value = this.#tx.get(key);
      this.#values.set(key, value);
    }
    return value;
  }

  first(key: Buffer): boolean {
    if (this.#written.has(key)) return false;
    this.#written.add(key);
    return true;
  }

  enqueued(keys: TypeKeys, scheduledTime: number): void {
    this.#handover?.enqueued(keys, scheduledTime);
  }
}
