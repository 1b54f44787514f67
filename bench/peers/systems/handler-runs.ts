// Handlers that run in worker threads report the jobs they run on a
// BroadcastChannel (it reaches every thread of the process), the ids of one
// turn of their thread's event loop in one message, so the main
// thread can count runs per job id for the exactly-once check without the
// systems' own bookkeeping; the latency rows' handlers report when they
// started on another.

import { BroadcastChannel } from 'node:worker_threads';
import type { CompletionLedger } from '../completion-ledger.js';

/** The channel name the handlers in bench/peers/handlers post to. */
export const HANDLER_RUNS_CHANNEL = 'jobtree-bench-peers:runs';

export interface HandlerRuns {
  /** Resolves once every job of the ledger has run at least once. */
  allRun(): Promise<void>;
  close(): void;
}

/** `ran`, when given, is called before the ids of each message are counted. */
export function listenToHandlerRuns(ledger: CompletionLedger, ran?: () => void): HandlerRuns {
  const channel = new BroadcastChannel(HANDLER_RUNS_CHANNEL);
  let wake: (() => void) | undefined;
  // A message carries the ids of the jobs one turn of a thread ran.
  channel.onmessage = (event) => {
    ran?.();
    for (const id of (event as MessageEvent).data as readonly string[]) ledger.markRun(String(id));
    if (ledger.ran === ledger.count) wake?.();
  };
  return {
    allRun: () =>
      ledger.ran === ledger.count
        ? Promise.resolve()
        : new Promise((resolve) => {
            wake = resolve;
          }),
    close: () => channel.close(),
  };
}

/** The channel the start-reporting handlers post `[id, epoch ms]` on as they start. */
export const HANDLER_STARTS_CHANNEL = 'jobtree-bench-peers:starts';

/** Calls `started` with each job id and the epoch milliseconds its handler started at, as handlers in threads report them. */
export function listenToHandlerStarts(started: (id: string, at: number) => void): { close(): void } {
  const channel = new BroadcastChannel(HANDLER_STARTS_CHANNEL);
  channel.onmessage = (event) => {
    const [id, at] = (event as MessageEvent).data as [string, number];
    started(id, at);
  };
  return { close: () => channel.close() };
}
