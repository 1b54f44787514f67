// The checker of a chaos run: from the recorded history and the final
// store it proves (or refutes) what jobtree claims under faults:
//
//   lost              an acknowledged add whose job is gone (and was never removed)
//   not_finished      after the drain, a job that is not finished
//   phantom           a job in the store that nobody ever added
//   resurrected       a job acknowledged as removed that is back
//   finished_twice    two successful finishes of one job (it is added once, never resubmitted)
//   foreign_result    a finished job whose data is no finish's result, or not the acknowledged finish's
//   subscriber_hang   a subscription that got neither a terminal event nor an error
//   wrong_terminal    a subscription that ended with a state the store contradicts
//   no_live_worker    (from the run) after a quiet period, a running job no live worker holds
//   tree_down         (from the run) the root supervisor gave up
//   worker_gone       (from the run) after the quiet period, a supervised worker or processor that is not running
//   no_new_owner      (from the crash loop) after its owner's kill, no client of a shared store took it over
//   client_stuck      (from the crash loop) a client that outlived its owner did not stop cleanly when told to
//
// The store's own invariants (data rows, pending index, activity rows) are
// checked by `checkJobsConsistency` and reported next to these.

import type { ConsistencyAnomaly, JobInfo } from '@jobtree/core';
import { excerpt, type HistoryEntry } from './history.js';

export type HistoryAnomalyKind =
  | 'lost'
  | 'not_finished'
  | 'phantom'
  | 'resurrected'
  | 'finished_twice'
  | 'foreign_result'
  | 'subscriber_hang'
  | 'wrong_terminal'
  | 'no_live_worker'
  | 'tree_down'
  | 'worker_gone'
  | 'no_new_owner'
  | 'client_stuck'
  | ConsistencyAnomaly['kind'];

export interface HistoryAnomaly {
  kind: HistoryAnomalyKind;
  type: string | undefined;
  id: string | undefined;
  detail: string;
}

export interface CheckInput {
  history: readonly HistoryEntry[];
  /** Every job in the store at the end. */
  jobs: readonly JobInfo[];
  /** The run drained: every job that exists must be finished. */
  drained: boolean;
}

interface JobHistory {
  added: boolean;
  addAcknowledged: boolean;
  removeInvoked: boolean;
  removeAcknowledged: boolean;
  finishInvoked: Set<string>;
  finishOk: string[];
  /** A scheduler gave the job up after its attempts: it finished failed, with no handler's result. */
  gaveUp: boolean;
}

const UNKNOWN_TOKEN = '(reported without its token)';

/** The data a chaos worker finishes a job with: the lock of the acceptance that produced it. */
export interface ChaosResult {
  token: string;
  by: string;
}

export function checkHistory({ history, jobs, drained }: CheckInput): HistoryAnomaly[] {
  const anomalies: HistoryAnomaly[] = [];
  const report = (kind: HistoryAnomalyKind, type: string | undefined, id: string | undefined, detail: string): void => {
    anomalies.push({ kind, type, id, detail });
  };
  const byJob = new Map<string, JobHistory>();
  const of = (type: string | undefined, id: string | undefined): JobHistory => {
    const key = JSON.stringify([type, id]);
    let job = byJob.get(key);
    if (job === undefined) {
      job = { added: false, addAcknowledged: false, removeInvoked: false, removeAcknowledged: false, finishInvoked: new Set(), finishOk: [], gaveUp: false };
      byJob.set(key, job);
    }
    return job;
  };

  for (const entry of history) {
    if (entry.id === undefined) continue;
    const job = of(entry.type, entry.id);
    if (entry.op === 'add') {
      job.added = true;
      if (entry.phase === 'ok') job.addAcknowledged = true;
    } else if (entry.op === 'remove') {
      job.removeInvoked = true;
      if (entry.phase === 'ok' && entry.state === 'removed') job.removeAcknowledged = true;
    } else if (entry.op === 'finish') {
      if (entry.phase === 'invoke' && entry.lock !== undefined) job.finishInvoked.add(entry.lock);
      // A scheduler's finish is reported without the token its handler sent (UNKNOWN_TOKEN).
      if (entry.phase === 'ok' && entry.state === 'finished') job.finishOk.push(entry.lock ?? UNKNOWN_TOKEN);
      if (entry.phase === 'ok' && entry.state === 'failed') job.gaveUp = true;
    }
  }

  const stored = new Map(jobs.map((job) => [JSON.stringify([job.type, job.id]), job]));
  for (const [key, job] of byJob) {
    const [type, id] = JSON.parse(key) as [string, string];
    if (!job.added) continue; // a subscription or fault line about a job this run never added
    const info = stored.get(key);
    if (info === undefined) {
      if (job.addAcknowledged && !job.removeInvoked) report('lost', type, id, 'acknowledged add, never removed, not in the store');
    } else {
      if (job.removeAcknowledged) report('resurrected', type, id, `acknowledged as removed, but ${info.state} in the store`);
      if (drained && info.state !== 'finished') report('not_finished', type, id, `still ${info.state} after the drain`);
    }
    if (job.finishOk.length > 1) report('finished_twice', type, id, `${job.finishOk.length} successful finishes: ${job.finishOk.join(', ')}`);
    const failedOutcome = job.gaveUp && info?.outcome === 'failed';
    if (info?.state === 'finished' && !failedOutcome) {
      // A handler's result is kept apart from the job's data; a worker's finish replaces the data.
      const token = resultToken(info.result ?? info.data);
      if (token === undefined || !job.finishInvoked.has(token)) {
        report('foreign_result', type, id, `finished with ${JSON.stringify(info.data)}, which no finish of this run sent`);
      } else if (job.finishOk.length === 1 && job.finishOk[0] !== token && job.finishOk[0] !== UNKNOWN_TOKEN) {
        report('foreign_result', type, id, `the acknowledged finish sent ${job.finishOk[0]}, the store holds ${token}`);
      }
    }
  }
  for (const [key, info] of stored) {
    if (!byJob.get(key)?.added) report('phantom', info.type, info.id, `${info.state} in the store, never added`);
  }

  // Subscriptions: each one made must have ended with a terminal event or an error.
  const subscriptions = new Map<number, { type?: string; id?: string; end?: HistoryEntry }>();
  for (const entry of history) {
    if (entry.sub === undefined) continue;
    if (entry.op === 'subscribe' && entry.phase === 'ok') {
      const terminal = entry.state === 'finished' || entry.state === 'not_found';
      subscriptions.set(entry.sub, { type: entry.type, id: entry.id, ...(terminal ? { end: entry } : {}) });
    }
    if (entry.op === 'sub_end') {
      const sub = subscriptions.get(entry.sub);
      if (sub !== undefined) sub.end = entry;
    }
  }
  for (const [number, sub] of subscriptions) {
    if (sub.end === undefined) {
      report('subscriber_hang', sub.type, sub.id, `subscription ${number} got no terminal event and no error`);
      continue;
    }
    const key = JSON.stringify([sub.type, sub.id]);
    const info = stored.get(key);
    // A job removed after it finished is missing from the store, rightly.
    const removed = byJob.get(key)?.removeInvoked === true && info === undefined;
    if (sub.end.phase === 'ok' && sub.end.state === 'finished' && info?.state !== 'finished' && !removed) {
      report('wrong_terminal', sub.type, sub.id, `subscription ${number} ended finished, the store says ${info?.state ?? 'missing'}`);
    }
    if (sub.end.phase === 'ok' && sub.end.state === 'not_found' && info !== undefined) {
      report('wrong_terminal', sub.type, sub.id, `subscription ${number} ended not_found, the store says ${info.state}`);
    }
  }
  return anomalies;
}

export function resultToken(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const token = (data as Partial<ChaosResult>).token;
  return typeof token === 'string' ? token : undefined;
}

/** An anomaly with the history lines of its job, for a failure message. */
export function describeAnomaly(anomaly: HistoryAnomaly, history: readonly HistoryEntry[]): string {
  const head = `${anomaly.kind} ${anomaly.type ?? ''}/${anomaly.id ?? ''}: ${anomaly.detail}`;
  const lines = anomaly.id === undefined ? '' : excerpt(history, anomaly.type, anomaly.id);
  return lines ? `${head}\n${lines}` : head;
}
