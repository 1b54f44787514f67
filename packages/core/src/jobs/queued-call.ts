// One call of the write batcher (write-batcher.ts) from its queueing to its
// outcome, and the outcomes of a `submitAll`.

import type { Settled } from './interfaces.js';
import type { WriteCounter, WriteRequest } from './write-requests.js';

/** What a failed call rejects with: the batcher's error as it is, or as its owner names it (a closed handle's `closed`). */
export type FailureOf = (error: unknown) => unknown;

/**
 * The resolving functions of the promise being made: `new Promise(capture)`
 * leaves them here for the call's constructor to take, so that no executor
 * closure is made per call.
 */
const nothingCaptured = (): void => {};
let capturedResolve: (value: unknown) => void = nothingCaptured;
let capturedReject: (reason: unknown) => void = nothingCaptured;
export function capture(resolve: (value: never) => void, reject: (reason: never) => void): void {
  capturedResolve = resolve as (value: unknown) => void;
  capturedReject = reject as (reason: unknown) => void;
}

/**
 * A call, from its queueing to its outcome: one of `submit` (it settles the
 * promise `submit` returned) or an item of `submitAll` (it fills its slot
 * in that call's outcomes). One object per call: the queue's entry and the
 * caller's waiter in one.
 */
export class QueuedCall {
  readonly request: WriteRequest<unknown>;
  /** Set after a shared transaction failed: this call now gets one of its own. */
  alone = false;
  /** Cleared after a parked accept failed in this call's transaction: it runs again without serving any. */
  serveParked = true;
  /** `submit`'s promise's resolving functions (else undefined). */
  readonly #resolve: ((value: unknown) => void) | undefined;
  readonly #reject: ((reason: unknown) => void) | undefined;
  readonly #failure: FailureOf;
  readonly #counter: WriteCounter | undefined;
  /** The `submitAll` this call is an item of (else undefined), and its place there. */
  readonly #many: ManyCalls | undefined;
  readonly #index: number;

  /** A call of `submit`, whose promise was made by `new Promise(capture)` just before. */
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: WriteCounter | undefined);
  /** The item `index` of a `submitAll`. */
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: undefined, many: ManyCalls, index: number);
  constructor(request: WriteRequest<unknown>, failure: FailureOf, counter: WriteCounter | undefined, many?: ManyCalls, index = 0) {
    this.request = request;
    this.#failure = failure;
    this.#counter = counter;
    this.#many = many;
    this.#index = index;
    if (many === undefined) {
      this.#resolve = capturedResolve;
      this.#reject = capturedReject;
      // Not kept past their call: they would hold its promise (and what waits on it) alive.
      capturedResolve = nothingCaptured;
      capturedReject = nothingCaptured;
    }
  }

  settle(outcome: Settled<unknown>): void {
    if (this.#many !== undefined) {
      this.#many.settle(this.#index, outcome);
      return;
    }
    if (outcome.status === 'fulfilled') this.#resolve?.(outcome.value);
    else this.#reject?.(this.#failure(outcome.reason));
    this.#counter?.settled();
  }
}

/** A `submitAll`: its outcomes, and one promise for all of them. */
export class ManyCalls {
  readonly #outcomes: Settled<unknown>[];
  readonly #resolve: (outcomes: Settled<unknown>[]) => void;
  #left: number;

  constructor(count: number, resolve: (outcomes: Settled<unknown>[]) => void) {
    this.#outcomes = new Array<Settled<unknown>>(count);
    this.#left = count;
    this.#resolve = resolve;
  }

  settle(index: number, outcome: Settled<unknown>): void {
    this.#outcomes[index] = outcome;
    this.#left -= 1;
    if (this.#left === 0) this.#resolve(this.#outcomes);
  }
}
