// How fast the pruner removes: at most `maxRemovalsPerSecond` jobs a second,
// by a pause after each prune transaction long enough that the batch and its
// pause together take the time its jobs are worth at that rate. Each prune
// transaction holds the store's single writer while it commits, and a drain
// beside a pruner that ran its batches back to back lost close to a third of
// its rate; paced, the pruner takes a bounded share of the writer whatever
// the size of the backlog; a large backlog takes its time (a round lasts
// until it is done, its pauses included).

/** The default cap: a drain beside the pruner keeps about 90% of its rate or more (bench/retention.ts), and a backlog of a million finished jobs goes in under 20 minutes. */
export const DEFAULT_MAX_REMOVALS_PER_SECOND = 1_000;

/**
 * The pause (real milliseconds) after a prune transaction that handled
 * `jobs` jobs (removed or indexed) in `elapsedMs`, for the pruner to stay
 * within `maxPerSecond`; 0 when the batch took that long already, or the
 * cap is infinite.
 */
export function pruneDelayMs(jobs: number, elapsedMs: number, maxPerSecond: number): number {
  if (!Number.isFinite(maxPerSecond) || jobs <= 0) return 0;
  return Math.max(0, Math.ceil((jobs * 1000) / maxPerSecond - elapsedMs));
}
