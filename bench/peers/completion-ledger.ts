// Counts, per job id, how often a handler ran it and how often the system
// reported it complete, so that every run can be checked for "each job
// finished exactly once": a fast result that lost or repeated jobs is not a
// result.

import { PeerBenchError } from './errors.js';

export class CompletionLedger {
  readonly #prefix: string;
  readonly #runs: Uint32Array;
  readonly #completions: Uint32Array;
  #completed = 0;
  #ran = 0;
  #onComplete: (() => void) | undefined;
  #firstRunAt: number | undefined;

  /** Jobs are named `${prefix}${i}` for i in [0, count). */
  constructor(prefix: string, count: number) {
    this.#prefix = prefix;
    this.#runs = new Uint32Array(count);
    this.#completions = new Uint32Array(count);
  }

  get count(): number {
    return this.#runs.length;
  }

  /** Distinct completions so far (a repeated one is counted by `verify`, not here). */
  get completed(): number {
    return this.#completed;
  }

  get ran(): number {
    return this.#ran;
  }

  /**
   * performance.now() when the first handler started: a drain is timed from
   * there, so that connecting and starting a worker pool (a one-time cost
   * that differs between systems) is not counted as draining.
   */
  get firstRunAt(): number {
    return this.#firstRunAt ?? Number.NaN;
  }

  id(index: number): string {
    return `${this.#prefix}${index}`;
  }

  /** A handler started job `id`. */
  markRun(id: string): void {
    const index = this.#index(id);
    this.#firstRunAt ??= performance.now();
    if (this.#runs[index] === 0) this.#ran++;
    this.#runs[index] = (this.#runs[index] ?? 0) + 1;
  }

  /** The system confirmed job `id` complete (durably, as far as it promises). */
  markComplete(id: string): void {
    const index = this.#index(id);
    if (this.#completions[index] === 0) this.#completed++;
    this.#completions[index] = (this.#completions[index] ?? 0) + 1;
    if (this.#completed === this.count) this.#onComplete?.();
  }

  /** Resolves once every job has been reported complete at least once. */
  allComplete(): Promise<void> {
    if (this.#completed === this.count) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onComplete = resolve;
    });
  }

  /**
   * Throws `not_exactly_once` unless every job ran once and completed once.
   * `checkRuns: false` for handlers whose runs the main thread cannot see.
   */
  verify(system: string, checkRuns = true): void {
    const problems: string[] = [];
    for (let i = 0; i < this.count; i++) {
      const runs = this.#runs[i] ?? 0;
      const completions = this.#completions[i] ?? 0;
      if (completions !== 1 || (checkRuns && runs !== 1)) {
        problems.push(`${this.id(i)}: ran ${runs}, completed ${completions}`);
        if (problems.length === 5) break;
      }
    }
    if (problems.length > 0) {
      throw new PeerBenchError('not_exactly_once', `${system}: jobs not finished exactly once (first ${problems.length}): ${problems.join('; ')}`);
    }
  }

  #index(id: string): number {
    const index = id.startsWith(this.#prefix) ? Number(id.slice(this.#prefix.length)) : Number.NaN;
    if (!Number.isInteger(index) || index < 0 || index >= this.count) {
      throw new PeerBenchError('not_exactly_once', `a job this run never added was reported: ${id}`);
    }
    return index;
  }
}
