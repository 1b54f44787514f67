// Bounds and narrates one benchmark run: it fails with `run_timeout` instead
// of hanging when a system stops making progress (no job run or completed
// for a minute) or overruns a generous deadline, and prints a progress line
// every few seconds while a long drain runs.

import type { CompletionLedger } from './completion-ledger.js';
import { PeerBenchError } from './errors.js';

const PROGRESS_EVERY_MS = 5_000;
/** A drain in which no job ran or completed for this long is stuck. */
const STALL_MS = 60_000;

/**
 * Generous: a slow system on a loaded 2-core machine must still finish (the
 * stall check catches a stuck drain long before), a stuck one must not hang
 * the benchmark.
 */
export function deadlineMs(jobs: number): number {
  return 120_000 + jobs * 20;
}

/**
 * Resolves with `work`'s value; rejects with `run_timeout` after `ms`.
 * While it runs, prints the ledger's progress now and then.
 */
export async function watchRun<T>(what: string, work: Promise<T>, ms: number, ledger?: CompletionLedger): Promise<T> {
  const started = performance.now();
  let timeout: NodeJS.Timeout | undefined;
  let progress: NodeJS.Timeout | undefined;
  let lastCount = -1;
  let lastChange = started;
  const bounds = new Promise<never>((_, reject) => {
    timeout = setTimeout(() => reject(new PeerBenchError('run_timeout', `${what} did not finish within ${ms / 1000} s`)), ms);
    progress = setInterval(() => {
      const now = performance.now();
      const seconds = ((now - started) / 1000).toFixed(0);
      const done = ledger ? `: ${ledger.ran.toLocaleString('en-US')} / ${ledger.count.toLocaleString('en-US')} run` : '';
      console.log(`      ... ${what}, ${seconds} s${done}`);
      if (!ledger) return;
      const count = ledger.ran + ledger.completed;
      if (count !== lastCount) {
        lastCount = count;
        lastChange = now;
      } else if (now - lastChange > STALL_MS) {
        reject(new PeerBenchError('run_timeout', `${what}: no job ran or completed for ${STALL_MS / 1000} s`));
      }
    }, PROGRESS_EVERY_MS);
  });
  try {
    return await Promise.race([work, bounds]);
  } finally {
    clearInterval(progress);
    clearTimeout(timeout);
  }
}
