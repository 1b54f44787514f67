// Bounds and narrates one benchmark run: it fails with `run_timeout` instead
// of hanging when a system stops making progress, and prints a progress line
// every few seconds while a long drain runs.

import type { CompletionLedger } from './completion-ledger.js';
import { PeerBenchError } from './errors.js';

const PROGRESS_EVERY_MS = 5_000;

/** Generous: a slow system on a loaded 2-core machine must still finish, a stuck one must not hang the run. */
export function deadlineMs(jobs: number): number {
  return 60_000 + jobs * 5;
}

/**
 * Resolves with `work`'s value; rejects with `run_timeout` after `ms`.
 * While it runs, prints the ledger's progress now and then.
 */
export async function watchRun<T>(what: string, work: Promise<T>, ms: number, ledger?: CompletionLedger): Promise<T> {
  const started = performance.now();
  let timeout: NodeJS.Timeout | undefined;
  const progress = setInterval(() => {
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    const done = ledger ? `: ${ledger.ran.toLocaleString('en-US')} / ${ledger.count.toLocaleString('en-US')} run` : '';
    console.log(`      ... ${what}, ${seconds} s${done}`);
  }, PROGRESS_EVERY_MS);
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timeout = setTimeout(() => reject(new PeerBenchError('run_timeout', `${what} did not finish within ${ms / 1000} s`)), ms);
      }),
    ]);
  } finally {
    clearInterval(progress);
    clearTimeout(timeout);
  }
}
