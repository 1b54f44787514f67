// Re-creates the history arithmetic of couch_replicator_scheduler: bounded
// per-job event lists, consecutive crashes under a health threshold, and the
// exponential crash backoff. Pure functions of their arguments; times are
// epoch milliseconds and histories are newest first.

/**
 * What happened to a job, as the scheduler records it. `lost`: its run ended
 * because another job's handler took the shared thread down (its reason names
 * that job), or the thread was lost with no culprit named; it is neither a
 * crash of its own nor a clean stop, so it leaves the crash streak as it was.
 */
export type HistoryEventType = 'added' | 'started' | 'stopped' | 'crashed' | 'lost';

export interface HistoryEvent {
  readonly type: HistoryEventType;
  /** Epoch milliseconds. */
  readonly at: number;
  /** For `crashed`: why (the handler's error message); for `stopped` and `lost`: what ended the run. */
  readonly reason?: string;
}

/** A crash backoff doubles per consecutive crash up to 2^10 times the base. */
export const MAX_BACKOFF_EXPONENT = 10;
/** The backoff after one crash. */
export const BACKOFF_BASE_MS = 30_000;

/**
 * How long a job that crashed `crashes` times in a row waits before it may
 * run again: 30 s · 2^(n−1), the exponent capped at 10 (about 8.5 hours).
 * No crash, no wait.
 */
export function backoffMs(crashes: number): number {
  if (crashes <= 0) return 0;
  return 2 ** Math.min(crashes - 1, MAX_BACKOFF_EXPONENT) * BACKOFF_BASE_MS;
}

/**
 * Crashes in a row at the head of `history`. A crash counts when it came
 * within `healthThresholdSeconds` of the event before it (a crash right
 * after starting, after another crash, after being stopped or added); a run
 * that lasted longer than the threshold, or a clean stop of a started run,
 * ends the streak. A run `lost` with another job's thread is skipped with the
 * start it ended: it says nothing about this job's health.
 */
export function consecutiveCrashes(history: readonly HistoryEvent[], healthThresholdSeconds: number): number {
  const thresholdMs = healthThresholdSeconds * 1000;
  // A lost run and the start it ended are taken out: what remains is this job's own record.
  const own = history.filter((event, i) => event.type !== 'lost' && !(event.type === 'started' && history[i - 1]?.type === 'lost'));
  let count = 0;
  for (let i = 0; i < own.length; i++) {
    const event = own[i] as HistoryEvent;
    const previous = own[i + 1];
    if (event.type === 'crashed' && previous !== undefined) {
      if (event.at - previous.at > thresholdMs) return count;
      count++;
    } else if (event.type === 'stopped' && previous?.type === 'started') {
      return count;
    }
  }
  return count;
}

/** When the job last crashed; 0 when it never did (as far as the history goes). */
export function latestCrashTime(history: readonly HistoryEvent[]): number {
  return firstAt(history, 'crashed');
}

/** When the job last started; 0 when it never did. */
export function lastStarted(history: readonly HistoryEvent[]): number {
  return firstAt(history, 'started');
}

/**
 * The time of the newest event of `type`, 0 when there is none. A loop, not
 * `find` with a callback: the scheduler asks this of every job it starts.
 */
function firstAt(history: readonly HistoryEvent[], type: HistoryEvent['type']): number {
  for (let i = 0; i < history.length; i++) {
    const event = history[i] as HistoryEvent;
    if (event.type === type) return event.at;
  }
  return 0;
}

/** Sort order: the job that started longest ago (or never) first. */
export function oldestJobFirst(a: { history: readonly HistoryEvent[] }, b: { history: readonly HistoryEvent[] }): number {
  return lastStarted(a.history) - lastStarted(b.history);
}

/**
 * Whether a job is out of its crash backoff at `now`: a job that was only
 * added, or was last stopped cleanly, always is.
 */
export function notRecentlyCrashed(history: readonly HistoryEvent[], now: number, healthThresholdSeconds: number): boolean {
  const head = history[0];
  if (head === undefined || head.type === 'stopped' || (head.type === 'added' && history.length === 1)) return true;
  const crashes = consecutiveCrashes(history, healthThresholdSeconds);
  return now - latestCrashTime(history) >= backoffMs(crashes);
}

/** `history` with `event` in front, cut to `maxHistory` events. */
export function withEvent(history: readonly HistoryEvent[], event: HistoryEvent, maxHistory: number): HistoryEvent[] {
  // One array of the final length, no intermediate slice nor growth by
  // push (which would reserve room for 16 more): the scheduler records an
  // event per job start.
  const kept = Math.min(history.length, Math.max(0, maxHistory - 1));
  const next = new Array<HistoryEvent>(kept + 1);
  next[0] = event;
  for (let i = 0; i < kept; i++) next[i + 1] = history[i] as HistoryEvent;
  return next;
}
