// The abort signal of one handler run in a lane. Its AbortController is made
// when the handler first reads `ctx.signal`: many handlers never do, and the
// controller (an EventTarget) is the costliest thing a run would allocate.
// An abort that comes first is kept, and the signal is born aborted with it.

import { HandlerAbortError } from './errors.js';
import type { AbortCause } from './handler-abort.js';

export class RunSignal {
  #controller: AbortController | undefined;
  #reason: HandlerAbortError | undefined;

  /** The run's signal, made on first use (already aborted when the run was). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the run's signal with a {@link HandlerAbortError}; the first cause wins. */
  abort(cause: AbortCause): void {
    if (this.#reason !== undefined) return;
    this.#reason = new HandlerAbortError(cause);
    this.#controller?.abort(this.#reason);
  }
}
