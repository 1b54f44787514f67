// OTP's add_restart: a sliding window of restart times. A supervisor that
// restarts more than `intensity` times within `period` gives up, so that a
// child crashing in a loop escalates to the parent instead of spinning.

export class RestartIntensity {
  readonly intensity: number;
  readonly period: number;
  #restarts: number[] = [];
  #now: () => number;

  constructor(intensity: number, period: number, now: () => number = () => performance.now()) {
    this.intensity = intensity;
    this.period = period;
    this.#now = now;
  }

  /** Restarts counted in the current window. */
  get count(): number {
    return this.#restarts.length;
  }

  /** Records one restart; false when it takes the count past `intensity` (the supervisor must stop). */
  add(): boolean {
    const now = this.#now();
    // Times are kept oldest first, so expired ones are a prefix.
    const firstKept = this.#restarts.findIndex((time) => now - time < this.period);
    this.#restarts = firstKept === -1 ? [] : this.#restarts.slice(firstKept);
    this.#restarts.push(now);
    return this.#restarts.length <= this.intensity;
  }
}
