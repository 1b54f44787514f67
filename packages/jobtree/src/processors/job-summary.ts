// Job summaries shaped like CouchDB's `_scheduler/jobs` (the job_ejson and
// job_summary functions of couch_replicator_scheduler).

import { hostname } from 'node:os';
import { consecutiveCrashes } from './history.js';
import type { HistoryEvent } from './history.js';
import type { HistoryEventJson, JobSummary } from './interfaces.js';
import type { ScheduleEntry } from './schedule-table.js';

/** This process, as a summary's `node`. */
export const NODE_NAME = `${hostname()}:${process.pid}`;

export function historyJson(history: readonly HistoryEvent[]): HistoryEventJson[] {
  return history.map((event) => {
    const json: HistoryEventJson = { timestamp: new Date(event.at).toISOString(), type: event.type };
    if (event.reason !== undefined) json.reason = event.reason;
    return json;
  });
}

export function jobSummary(type: string, entry: ScheduleEntry, healthThreshold: number, threadId: number | undefined): JobSummary {
  const errorCount = consecutiveCrashes(entry.history, healthThreshold);
  const head = entry.history[0];
  const crashing = !entry.running && errorCount > 0 && head?.type === 'crashed';
  return {
    id: entry.id,
    type,
    state: entry.running ? 'running' : crashing ? 'crashing' : 'pending',
    info: crashing ? (head?.reason ?? null) : null,
    error_count: errorCount,
    pid: entry.running && threadId !== undefined ? `thread:${threadId}` : null,
    node: NODE_NAME,
    continuous: entry.continuous,
    start_time: new Date(entry.history.at(-1)?.at ?? 0).toISOString(),
    last_updated: new Date(head?.at ?? 0).toISOString(),
    history: historyJson(entry.history),
  };
}
