// One wait of an accept left without a job (accept-calls.ts): it ends when
// the type's pending watch fires, after a time, when the accept's signal
// aborts, when the handle closes, or when a write hands the accept its jobs
// (parked-accepts.ts), whichever comes first. One object for all of them:
// an idle worker waits once per job, and a closure per way to end (each
// named by tsx) and a race of promises were a visible share of that job's
// allocations.

import type { Watch } from '../storage/interfaces.js';

/** setTimeout's largest delay: a longer wait ends there, and the accept reads the queue and waits again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The waits the handle's close ends (each `AcceptCalls` keeps one set). */
export type ClosingWaits = Set<AcceptWait>;

export class AcceptWait {
  /** Resolves once the wait ended; rejects when the watch failed first (the storage gave up on it). */
  readonly ended: Promise<void>;
  readonly #watch: Watch;
  readonly #signal: AbortSignal | undefined;
  readonly #closing: ClosingWaits;
  #timer: NodeJS.Timeout | undefined;
  /** Woken by close, the signal or the timer: registered with them until released. */
  #armed = false;
  #resolve!: () => void;

  /**
   * Starts waiting up to `ms`. `closed`: the handle closed while the
   * transaction that made the watch was in flight (it woke the waits it
   * knew, not this one); the wait then ends at once, as when the signal has
   * fired already.
   */
  constructor(watch: Watch, ms: number, signal: AbortSignal | undefined, served: Promise<void>, closing: ClosingWaits, closed: boolean) {
    this.#watch = watch;
    this.#signal = signal;
    this.#closing = closing;
    let reject!: (error: unknown) => void;
    this.ended = new Promise<void>((resolve, rejectWait) => {
      this.#resolve = resolve;
      reject = rejectWait;
    });
    watch.promise.then(this.#resolve, reject);
    served.then(this.#resolve);
    if (closed || signal?.aborted) {
      this.#resolve();
      return;
    }
    this.#armed = true;
    closing.add(this);
    signal?.addEventListener('abort', this, { once: true });
    if (Number.isFinite(ms)) this.#timer = setTimeout(this.#resolve, Math.min(ms, MAX_TIMER_MS));
  }

  /** The handle closes. */
  wake(): void {
    this.#resolve();
  }

  /** The signal aborted (the wait is its listener). */
  handleEvent(): void {
    this.#resolve();
  }

  /**
   * Lets go of the timer, the listeners and the watch, once the wait ended
   * (whatever of them fires meanwhile only settles what has settled
   * already). Called once.
   */
  release(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#armed) {
      this.#closing.delete(this);
      this.#signal?.removeEventListener('abort', this);
    }
    this.#watch.cancel();
  }
}

/** `wait.release()`, for `setImmediate(releaseWait, wait)`: no closure per wait. */
export function releaseWait(wait: AcceptWait): void {
  wait.release();
}
