// A read-only check of the jobs keyspace's invariants, for fault-injection
// suites and operators: the data rows, the pending index and the activity
// rows must describe the same jobs. Everything is read in one snapshot
// transaction (one read version, no conflicts with the writers it watches),
// so the invariants must hold at whatever moment it runs, not only when the
// app is idle.
//
//   pending job  <-> exactly one (pending, type, -prio, stime, id) key, with its priority and time; no activity row
//   running job  <-> exactly one (activity, type, seq) row holding its id, at its current seq; no pending key
//   finished job <-> no pending key, no activity row; exactly the outcome row its record claims (none, or
//                    (outcomes, its outcome, type, id)), and a failed or cancelled job always claims one;
//                    an entry in a (finished_log, type, its outcome, its finish time, seq) row when its
//                    record has a finish time (none before the log existed); each type's count of those
//                    jobs is what (finished_count, outcome, type) holds. A log entry of a job no longer
//                    finished so is allowed (stale: retention drops it).
//   flow rows    <-> as flow-consistency.ts says (a parent's count, its children's links, a waiting job's row)

import type { Subspace } from '../keys/subspace.js';
import type { Database } from '../storage/interfaces.js';
import { unpackIds } from './finish-log.js';
import { type FlowAnomalyKind, checkFlowRows, flowRowRanges } from './flow-consistency.js';
import { JobKeys } from './job-keys.js';
import { decodeJobRecord, type JobRecord, type JobState } from './job-record.js';

/** What can be wrong with the keyspace, one code per broken invariant. */
export type ConsistencyAnomalyKind =
  /** A data row that does not decode, or a key that does not unpack. */
  | 'corrupt_row'
  /** A pending job with no pending key. */
  | 'pending_not_indexed'
  /** A pending job with more than one pending key. */
  | 'pending_indexed_twice'
  /** A pending key whose priority or scheduled time differs from its job's. */
  | 'pending_index_mismatch'
  /** A pending key of a job that is missing or not pending. */
  | 'orphan_pending_key'
  /** A running job with no activity row at its sequence: nothing would ever re-enqueue it. */
  | 'running_without_activity'
  /** A running job with more than one activity row. */
  | 'running_activity_twice'
  /** An activity row of a job that is missing, not running, or running at another sequence. */
  | 'orphan_activity_row'
  /** An outcome row of a job that is missing, not finished, or whose record does not claim that row. */
  | 'orphan_outcome_row'
  /** A finished job whose record claims an outcome row that is not there, or a failed or cancelled job that claims none. */
  | 'outcome_row_missing'
  /** A type with a concurrency limit whose running counter differs from its activity rows (see type-limits.ts). */
  | 'running_count_mismatch'
  /** A finished job whose record has a finish time but no finish log entry at it. */
  | 'finish_row_missing'
  /** A type's count of finished jobs with a finish time that is not how many there are. */
  | 'finish_count_mismatch'
  /** The rows of job flows: see flow-consistency.ts. */
  | FlowAnomalyKind;

export interface ConsistencyAnomaly {
  kind: ConsistencyAnomalyKind;
  type: string;
  /** The job, when the row names one. */
  id: string | undefined;
  detail: string;
}

/** A running job as its data row records it. */
export interface RunningJobEntry {
  type: string;
  id: string;
  /** The lock of the worker that holds it (32 hex characters). */
  lock: string;
}

export interface ConsistencyReport {
  /** Data rows read. */
  jobs: number;
  /** Jobs by state. */
  states: Record<JobState, number>;
  /** Every running job with its lock, to match against the workers that should hold them. */
  running: RunningJobEntry[];
  /** Every broken invariant found; empty when the keyspace is consistent. */
  anomalies: ConsistencyAnomaly[];
}

interface DataRow {
  type: string;
  id: string;
  record: JobRecord;
}

/**
 * Reads the whole jobs keyspace of `database` in one snapshot transaction
 * and reports every row that breaks an invariant. It writes nothing. Meant
 * for checks and tests: it reads every job, so its cost grows with the
 * store.
 */
export async function checkJobsConsistency(database: Database): Promise<ConsistencyReport> {
  const keys = new JobKeys();
  const { dataRows, pendingRows, activityRows, outcomeRows, limitRows, runningCounts, finishRows, countRows, groupRows, flowRows } = await database.doTransaction(async (tx) => {
    const snapshot = tx.snapshot();
    const { flows, children, parents } = flowRowRanges();
    const [data, pending, activity, outcomes, limits, running, finished, counts, groups, flowRows, childRows, parentRows] = await Promise.all([
      snapshot.getRange(keys.data.range().begin, keys.data.range().end),
      snapshot.getRange(keys.pending.range().begin, keys.pending.range().end),
      snapshot.getRange(keys.activity.range().begin, keys.activity.range().end),
      snapshot.getRange(keys.outcomes.range().begin, keys.outcomes.range().end),
      snapshot.getRange(keys.typeLimits.range().begin, keys.typeLimits.range().end),
      snapshot.getRange(keys.typeRunning.range().begin, keys.typeRunning.range().end),
      snapshot.getRange(keys.finishLog.range().begin, keys.finishLog.range().end),
      snapshot.getRange(keys.finishedCount.range().begin, keys.finishedCount.range().end),
      snapshot.getRange(keys.groups.range().begin, keys.groups.range().end),
      snapshot.getRange(flows.begin, flows.end),
      snapshot.getRange(children.begin, children.end),
      snapshot.getRange(parents.begin, parents.end),
    ]);
    return {
      dataRows: data,
      pendingRows: pending,
      activityRows: activity,
      outcomeRows: outcomes,
      limitRows: limits,
      runningCounts: running,
      finishRows: finished,
      countRows: counts,
      groupRows: groups,
      flowRows: { flows: flowRows, children: childRows, parents: parentRows },
    };
  });

  const anomalies: ConsistencyAnomaly[] = [];
  const report = (kind: ConsistencyAnomalyKind, type: string, id: string | undefined, detail: string): void => {
    anomalies.push({ kind, type, id, detail });
  };

  const jobs = new Map<string, DataRow>();
  const states: Record<JobState, number> = { waiting: 0, pending: 0, running: 0, finished: 0 };
  for (const row of dataRows) {
    const [type, id] = unpackStrings(tryUnpack(keys.data, row.key));
    if (type === undefined || id === undefined) {
      report('corrupt_row', String(type ?? '?'), undefined, `data key ${row.key.toString('hex')} is not (type, id)`);
      continue;
    }
    try {
      const record = decodeJobRecord(row.value);
      jobs.set(jobKey(type, id), { type, id, record });
      states[record.state] += 1;
    } catch (error) {
      report('corrupt_row', type, id, (error as Error).message);
    }
  }

  // The pending index: every key names a pending job, with the job's own rank.
  const pendingKeys = new Map<string, number>();
  for (const row of pendingRows) {
    const [type, negated, scheduledTime, id] = tryUnpack(keys.pending, row.key);
    if (typeof type !== 'string' || typeof negated !== 'number' || typeof scheduledTime !== 'number' || typeof id !== 'string') {
      report('corrupt_row', typeof type === 'string' ? type : '?', undefined, `pending key ${row.key.toString('hex')} is not (type, prio, stime, id)`);
      continue;
    }
    const key = jobKey(type, id);
    pendingKeys.set(key, (pendingKeys.get(key) ?? 0) + 1);
    const job = jobs.get(key);
    if (job === undefined || job.record.state !== 'pending') {
      report('orphan_pending_key', type, id, `pending key of a job that is ${job?.record.state ?? 'missing'}`);
      continue;
    }
    const priority = negated === 0 ? 0 : -negated;
    if (priority !== job.record.priority || scheduledTime !== job.record.scheduledTime) {
      report(
        'pending_index_mismatch',
        type,
        id,
        `pending key has priority ${priority} and time ${scheduledTime}, the job ${job.record.priority} and ${job.record.scheduledTime}`,
      );
    }
  }

  // Groups (job-groups.ts): a grouped pending job is indexed in its group's
  // queue, and its group has a turn or an arrival, or no take would reach it;
  // a group's running counter counts its running jobs.
  const waitingGroups = new Set<string>();
  const groupCounters = new Map<string, number>();
  for (const row of groupRows) {
    const [kind, type, ...rest] = tryUnpack(keys.groups, row.key);
    if (typeof type !== 'string') continue;
    if (kind === 'turn_of' || kind === 'arrivals') waitingGroups.add(JSON.stringify([type, rest[0]]));
    if (kind === 'running' && row.value.length === 8) groupCounters.set(JSON.stringify([type, rest[0]]), Number(row.value.readBigInt64LE(0)));
    if (kind !== 'pending') continue;
    const [group, negated, scheduledTime, id] = rest;
    if (typeof group !== 'string' || typeof negated !== 'number' || typeof scheduledTime !== 'number' || typeof id !== 'string') {
      report('corrupt_row', type, undefined, `group pending key ${row.key.toString('hex')} is not (type, group, prio, stime, id)`);
      continue;
    }
    const key = jobKey(type, id);
    pendingKeys.set(key, (pendingKeys.get(key) ?? 0) + 1);
    const record = jobs.get(key)?.record;
    if (record === undefined || record.state !== 'pending' || record.group !== group) {
      report('orphan_pending_key', type, id, `pending key in group ${group} of a job that is ${record === undefined ? 'missing' : `${record.state} in group ${String(record.group)}`}`);
      continue;
    }
    const priority = negated === 0 ? 0 : -negated;
    if (priority !== record.priority || scheduledTime !== record.scheduledTime) {
      report('pending_index_mismatch', type, id, `group pending key has priority ${priority} and time ${scheduledTime}, the job ${record.priority} and ${record.scheduledTime}`);
    }
  }
  const runningInGroups = new Map<string, number>();
  for (const { type, id, record } of jobs.values()) {
    if (record.group === undefined) continue;
    const group = JSON.stringify([type, record.group]);
    if (record.state === 'pending' && !waitingGroups.has(group)) report('pending_not_indexed', type, id, `a pending job of group ${record.group}, which has no turn`);
    if (record.state === 'running') runningInGroups.set(group, (runningInGroups.get(group) ?? 0) + 1);
  }
  for (const group of new Set([...groupCounters.keys(), ...runningInGroups.keys()])) {
    const counted = groupCounters.get(group) ?? 0;
    const rows = runningInGroups.get(group) ?? 0;
    const [type, name] = JSON.parse(group) as [string, string];
    if (counted !== rows) report('running_count_mismatch', type, undefined, `the running counter of group ${name} holds ${counted}, the group has ${rows} running jobs`);
  }

  // Activity rows: each names a running job at exactly the job's sequence.
  const activityCount = new Map<string, number>();
  const activityKeys = new Set<string>();
  for (const row of activityRows) {
    activityKeys.add(row.key.toString('hex'));
    const [type] = tryUnpack(keys.activity, row.key);
    const id = row.value.toString('utf8');
    if (typeof type !== 'string') {
      report('corrupt_row', '?', id, `activity key ${row.key.toString('hex')} is not (type, versionstamp)`);
      continue;
    }
    const key = jobKey(type, id);
    activityCount.set(key, (activityCount.get(key) ?? 0) + 1);
    const job = jobs.get(key);
    const record = job?.record;
    if (record === undefined || record.state !== 'running' || record.seq === undefined || !keys.forType(type).activityKey(record.seq).equals(row.key)) {
      const what = record === undefined ? 'missing' : record.state !== 'running' ? record.state : 'running at another sequence';
      report('orphan_activity_row', type, id, `activity row of a job that is ${what}`);
    }
  }

  // Outcome rows: each is the one its finished job's record claims.
  const outcomeRowsOf = new Set<string>();
  for (const row of outcomeRows) {
    const [outcome, type, id] = tryUnpack(keys.outcomes, row.key);
    if (typeof outcome !== 'string' || typeof type !== 'string' || typeof id !== 'string') {
      report('corrupt_row', typeof type === 'string' ? type : '?', undefined, `outcome key ${row.key.toString('hex')} is not (outcome, type, id)`);
      continue;
    }
    const key = jobKey(type, id);
    const record = jobs.get(key)?.record;
    if (record?.outcome !== outcome || !record.outcomeRow) {
      const what = record === undefined ? 'missing' : record.state !== 'finished' ? record.state : `${record.outcome} without a ${outcome} row`;
      report('orphan_outcome_row', type, id, `${outcome} row of a job that is ${what}`);
      continue;
    }
    outcomeRowsOf.add(key);
  }

  // Finish log entries: every finished job with a finish time has one (stale ones are allowed).
  const loggedAt = new Set<string>();
  for (const row of finishRows) {
    const [type, outcome, finishedAt] = tryUnpack(keys.finishLog, row.key);
    let ids: string[] | undefined;
    try {
      ids = unpackIds(row.value);
    } catch {
      ids = undefined;
    }
    if (typeof outcome !== 'string' || typeof type !== 'string' || typeof finishedAt !== 'number' || ids === undefined) {
      report('corrupt_row', typeof type === 'string' ? type : '?', undefined, `finish log row ${row.key.toString('hex')} is not (type, outcome, time, seq) -> ids`);
      continue;
    }
    for (const id of ids) loggedAt.add(JSON.stringify([type, id, outcome, finishedAt]));
  }
  const rowCounts = new Map<string, number>();
  for (const { type, record } of jobs.values()) {
    if (record.state !== 'finished' || record.outcome === undefined || record.finishedAt === undefined) continue;
    const counted = JSON.stringify([record.outcome, type]);
    rowCounts.set(counted, (rowCounts.get(counted) ?? 0) + 1);
  }
  const storedCounts = new Map<string, number>();
  for (const row of countRows) {
    const [outcome, type] = tryUnpack(keys.finishedCount, row.key);
    storedCounts.set(JSON.stringify([outcome, type]), row.value.length >= 8 ? Number(row.value.readBigInt64LE(0)) : Number.NaN);
  }
  for (const counted of new Set([...rowCounts.keys(), ...storedCounts.keys()])) {
    const rows = rowCounts.get(counted) ?? 0;
    const stored = storedCounts.get(counted) ?? 0;
    if (rows === stored) continue;
    const [outcome, type] = JSON.parse(counted) as [unknown, unknown];
    report('finish_count_mismatch', String(type), undefined, `${rows} ${String(outcome)} logged jobs, counted ${stored}`);
  }

  const running: RunningJobEntry[] = [];
  for (const [key, { type, id, record }] of jobs) {
    if (record.state === 'finished') {
      if (record.finishedAt !== undefined && !loggedAt.has(JSON.stringify([type, id, record.outcome, record.finishedAt]))) {
        report('finish_row_missing', type, id, `a job finished at ${record.finishedAt} without its finish log entry`);
      }
      const claims = record.outcomeRow || record.outcome === 'failed' || record.outcome === 'cancelled';
      if (claims && !outcomeRowsOf.has(key)) report('outcome_row_missing', type, id, `a ${record.outcome} job without its outcome row`);
    }
    const indexed = pendingKeys.get(key) ?? 0;
    const active = activityCount.get(key) ?? 0;
    if (record.state === 'pending') {
      if (indexed === 0) report('pending_not_indexed', type, id, 'a pending job no accept can find');
      if (indexed > 1) report('pending_indexed_twice', type, id, `${indexed} pending keys`);
    }
    if (record.state === 'running') {
      if (record.lock !== undefined) running.push({ type, id, lock: record.lock });
      const own = record.seq === undefined ? undefined : keys.forType(type).activityKey(record.seq);
      const hasOwn = own !== undefined && activityKeys.has(own.toString('hex'));
      if (!hasOwn) report('running_without_activity', type, id, 'a running job the activity monitor cannot see');
      if (active > 1) report('running_activity_twice', type, id, `${active} activity rows`);
    }
  }
  // A concurrency limit trusts the type's running counter: it must count the activity rows.
  const activityByType = new Map<string, number>();
  for (const row of activityRows) {
    const [type] = tryUnpack(keys.activity, row.key);
    if (typeof type === 'string') activityByType.set(type, (activityByType.get(type) ?? 0) + 1);
  }
  const counters = new Map<string, number>();
  for (const row of runningCounts) {
    const [type] = tryUnpack(keys.typeRunning, row.key);
    if (typeof type === 'string' && row.value.length === 8) counters.set(type, Number(row.value.readBigInt64LE(0)));
  }
  for (const row of limitRows) {
    const [type] = tryUnpack(keys.typeLimits, row.key);
    if (typeof type !== 'string') continue;
    let limited = false;
    try {
      limited = (JSON.parse(row.value.toString('utf8')) as { concurrency?: unknown }).concurrency !== undefined;
    } catch {
      report('corrupt_row', type, undefined, 'a limits row that is not JSON');
    }
    const counted = counters.get(type) ?? 0;
    const rows = activityByType.get(type) ?? 0;
    if (limited && counted !== rows) report('running_count_mismatch', type, undefined, `the running counter holds ${counted}, the type has ${rows} activity rows`);
  }
  checkFlowRows(flowRows, jobs, report);
  return { jobs: jobs.size, states, running, anomalies };
}

function jobKey(type: string, id: string): string {
  return JSON.stringify([type, id]);
}

/** The key's tuple elements, or none when its bytes are not a tuple: reported, not thrown. */
function tryUnpack(space: Subspace, key: Uint8Array): readonly unknown[] {
  try {
    return space.unpack(key);
  } catch {
    return [];
  }
}

function unpackStrings(items: readonly unknown[]): [string | undefined, string | undefined] {
  const [type, id] = items;
  return [typeof type === 'string' ? type : undefined, typeof id === 'string' ? id : undefined];
}
