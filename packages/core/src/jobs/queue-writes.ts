// The writes a local queue makes or counts (its consumers' finishes, its
// give-backs and its stamps): its `stop()` resolves once they have all
// settled. A `Jobs` handle's counted finish reports to `counter` when it
// settles, so the queue needs no `then` per finish of its own.

import type { WriteCounter } from './write-requests.js';

export class QueueWrites {
  #pending = 0;
  #done: (() => void) | undefined;

  /** Told by the source when a counted finish settles (see {@link counted}). */
  readonly counter: WriteCounter = {
    settled: () => this.#settled(),
  };

  /** A write the source reports to {@link counter} when it settles. */
  counted(): void {
    this.#pending += 1;
  }

  /** Counts `write` until it settles (a `then` with one shared callback). */
  track<R>(write: Promise<R>): Promise<R> {
    this.#pending += 1;
    write.then(this.#onSettled, this.#onSettled);
    return write;
  }

  /** Resolves once every write counted so far, and any counted meanwhile, has settled. */
  settled(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#done = resolve;
    });
  }

  readonly #onSettled = (): void => this.#settled();

  #settled(): void {
    this.#pending -= 1;
    if (this.#pending === 0) this.#done?.();
  }
}
