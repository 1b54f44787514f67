// What a scheduler needs from whatever runs its handlers: start runs, abort
// their signals, end a run that ignores its abort, and close. Handler threads
// (handler-pool.ts) are one such runner; every runner reports back through
// HandlerPoolEvents (settled, update, lost).

import type { Worker } from 'node:worker_threads';
import type { AbortCause } from './interfaces.js';
import type { LaneRun } from './lane-protocol.js';

export interface HandlerRunner {
  /** The worker threads running handlers (for monitoring and fault injection); none when handlers run on the main thread. */
  readonly threads: readonly Worker[];
  /** The thread id running a job's handler, once it has started. */
  threadIdOf(serial: number): number | undefined;
  /** Whether a job's handler has been called or is about to be (its module is loaded). */
  isStarted(serial: number): boolean;
  /** Starts runs; each ends with one `settled` or `lost` event. */
  start(runs: readonly LaneRun[]): void;
  /** Aborts the signals of running handlers. */
  abort(serials: readonly number[], cause: AbortCause): void;
  /** Ends a run that ignored its abort signal, that run's fault; it is reported `lost`. */
  killThreadOf(serial: number, reason: string): void;
  /** Ends every run at once; running ones are reported lost. */
  close(): Promise<void>;
}
