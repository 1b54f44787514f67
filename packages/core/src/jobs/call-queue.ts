// The write batcher's queue of calls waiting for a transaction (see
// write-batcher.ts).

import type { QueuedCall } from './queued-call.js';

/**
 * The calls waiting for a transaction, in order. Taking a batch from the
 * front moves a head index: a burst of addMany calls queues tens of
 * thousands of calls, and copying the rest of the queue after every batch
 * of 1,000 made the taking quadratic (a visible share of the processors'
 * profile).
 */
export class CallQueue {
  #entries: QueuedCall[] = [];
  #head = 0;

  get length(): number {
    return this.#entries.length - this.#head;
  }

  /** Index of the first call. */
  get head(): number {
    return this.#head;
  }

  /** Index after the last call. */
  get end(): number {
    return this.#entries.length;
  }

  at(index: number): QueuedCall {
    return this.#entries[index] as QueuedCall;
  }

  push(entry: QueuedCall): void {
    this.#entries.push(entry);
  }

  /**
   * Drops the calls before `index`, except `kept` (calls among them that
   * stay queued, in order), which go back to the front: there is room for
   * them in the slots just taken.
   */
  consume(index: number, kept: readonly QueuedCall[]): void {
    const entries = this.#entries;
    const head = index - kept.length;
    for (let i = 0; i < kept.length; i++) entries[head + i] = kept[i] as QueuedCall;
    for (let i = this.#head; i < head; i++) entries[i] = undefined as unknown as QueuedCall; // released for the GC
    this.#head = head;
    this.#compact();
  }

  /** Puts calls back at the front, in order. */
  unshift(front: readonly QueuedCall[]): void {
    if (front.length <= this.#head) {
      this.#head -= front.length;
      for (let i = 0; i < front.length; i++) this.#entries[this.#head + i] = front[i] as QueuedCall;
      return;
    }
    this.#entries = front.concat(this.#entries.slice(this.#head));
    this.#head = 0;
  }

  /** Every call, the queue left empty. */
  takeAll(): QueuedCall[] {
    const all = this.#entries.slice(this.#head);
    this.#entries = [];
    this.#head = 0;
    return all;
  }

  /** Once the taken slots are most of the array, they are cut off (amortized: each call moves at most once per halving). */
  #compact(): void {
    if (this.#head === this.#entries.length) {
      this.#entries = [];
      this.#head = 0;
    } else if (this.#head > 1_024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}
