/**
 * setTimeout's largest delay, 2^31 - 1 ms (about 24.8 days): a longer one
 * fires at once instead, so timeouts are checked against it or capped at it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A one-shot timer of any length: setTimeout in steps of at most
 * MAX_TIMER_MS, so a call, receive or sendAfter given a month waits a month.
 */
export class LongTimeout {
  #timer: NodeJS.Timeout | undefined;

  constructor(callback: () => void, ms: number) {
    if (ms <= MAX_TIMER_MS) this.#timer = setTimeout(callback, ms);
    else this.#step(callback, ms);
  }

  #step(callback: () => void, left: number): void {
    if (left <= MAX_TIMER_MS) this.#timer = setTimeout(callback, left);
    else this.#timer = setTimeout(() => this.#step(callback, left - MAX_TIMER_MS), MAX_TIMER_MS);
  }

  clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
