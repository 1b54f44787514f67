// The history of a chaos run: one JSON line per operation, appended with a
// single write each by whoever performed it (the main thread, a worker actor
// in its own thread, a child process about to be killed with -9). A line is
// written before an operation is sent (`invoke`) and after its answer (`ok`,
// `halt`, `fail`); an operation whose writer died in between has no answer
// and is indeterminate, as in a Jepsen history.

import { appendFileSync, closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';

export type HistoryOp =
  | 'add'
  | 'remove'
  | 'accept'
  | 'update'
  | 'finish'
  | 'subscribe'
  | 'event'
  | 'sub_end'
  | 'fault'
  | 'kill9'
  | 'restart';

export type HistoryPhase = 'invoke' | 'ok' | 'halt' | 'fail';

export interface HistoryEntry {
  /** Milliseconds since the epoch (fractional). */
  t: number;
  op: HistoryOp;
  phase?: HistoryPhase;
  type?: string;
  id?: string;
  /** The acceptance an update or finish belongs to. */
  lock?: string;
  /** Who did it: a worker's name and incarnation, `adder`, `subscriber`, `harness`. */
  by?: string;
  /** A subscription's number. */
  sub?: number;
  /** A job state: an event's, a finish's outcome, a subscription's end. */
  state?: string;
  /** An error's code or message. */
  error?: string;
  /** A fault's kind and target, anything else worth printing. */
  detail?: string;
}

/** Appends entries to a history file; usable from any thread or process. */
export class HistoryLog {
  readonly path: string;
  #fd: number | undefined;

  constructor(path: string) {
    this.path = path;
    this.#fd = openSync(path, 'a');
  }

  record(entry: Omit<HistoryEntry, 't'>): void {
    if (this.#fd === undefined) return;
    // One write per line: a writer killed mid-run leaves whole lines only.
    writeSync(this.#fd, `${JSON.stringify({ t: performance.timeOrigin + performance.now(), ...entry })}\n`);
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

/**
 * Appends one entry to `path` with its own open and close: for actors, which
 * can be killed at any moment and would leak a descriptor kept open.
 */
export function appendHistory(path: string, entry: Omit<HistoryEntry, 't'>): void {
  appendFileSync(path, `${JSON.stringify({ t: performance.timeOrigin + performance.now(), ...entry })}\n`);
}

/** Reads a history file; a last line cut by a kill -9 is dropped. */
export function readHistory(path: string): HistoryEntry[] {
  if (!existsSync(path)) return [];
  const entries: HistoryEntry[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.length === 0) continue;
    try {
      entries.push(JSON.parse(line) as HistoryEntry);
    } catch {
      // only the last line of a killed writer can be partial
    }
  }
  return entries.sort((a, b) => a.t - b.t);
}

/**
 * Calls answered with an error other than `halt`, by operation and error
 * code: not anomalies (a caller may see an error), but worth a look.
 */
export function failureCounts(entries: readonly HistoryEntry[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const entry of entries) {
    if (entry.phase !== 'fail') continue;
    const code = (entry.error ?? 'unknown').split(':')[0];
    const key = `${entry.op} ${code}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** A few lines around the entries of one job, for an anomaly's report. */
export function excerpt(entries: readonly HistoryEntry[], type: string | undefined, id: string | undefined, max = 12): string {
  const lines = entries.filter((entry) => entry.id === id && entry.type === type).slice(-max);
  return lines.map((entry) => `    ${new Date(entry.t).toISOString().slice(11, 23)} ${JSON.stringify({ ...entry, t: undefined })}`).join('\n');
}
