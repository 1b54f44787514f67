// Limits per job type, kept in the store so that they hold across every
// process and node of one store: at most `concurrency` jobs of the type
// running at once, at most `rate.max` starts in each window of
// `rate.perMs` milliseconds, for any window (see rate-log.ts).
//
// Three rows per type (see job-keys.ts): the limits themselves, a counter of
// the type's running jobs, and the rate's log of recent starts.
// Every take adds the jobs it made running to the counter and every path by
// which a job stops running (finish, fail, cancel, remove, the activity
// monitor's re-enqueue) subtracts one, in the same transaction as the
// change of state: a crashed process's slots come back with its jobs. The
// counter is kept for every type, limited or not, so that it is right the
// moment limits are set; an atomic add costs no read and no conflict.
// Setting a concurrency counts the type's activity rows again, so a counter
// from before limits existed is made exact.
//
// A take reads the limits row (one point read, at once on the embedded
// store); only a limited type reads the counter and the rate's log, with
// read conflicts, so two takes can never both fill the last slot. The rate
// is counted on the clock of the handle that runs the take (`now`, ms).
//
// A take held back waits on what may let it through: the running counter (a
// finish), the time its rate next allows a start, and the limits row, which
// setting limits changes (lifted or raised, they may let it through at once).

import { JobsError } from '../errors.js';
import { getMany, readsAtOnce } from '../storage/fast-paths.js';
import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import type { AcceptBatch } from './accept-batcher.js';
import { eitherWatch } from './either-watch.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import type { GroupLimits } from './job-groups.js';
import type { OncePerAttempt } from './pending-queue.js';
import { RateLog } from './rate-log.js';

/** A type's limits; an absent field sets no limit of that kind. */
export interface TypeLimits {
  /** At most this many jobs of the type running at once, across every process of the store. */
  concurrency?: number;
  /** At most `max` starts in any window of `perMs` milliseconds. */
  rate?: { max: number; perMs: number };
  /** Limits that hold for each group of the type on its own (jobs added with a `group`; see job-groups.ts). */
  group?: GroupLimits;
}

/** A bigint operand: no conversion per end of a run. */
const MINUS_ONE = -1n;

/** The most a concurrency or a rate's `max` may be. */
const MAX_LIMIT = 1_000_000_000;

/** Checks limits given to `setTypeLimits`: `null` clears them. */
export function checkTypeLimits(limits: unknown): TypeLimits | null {
  if (limits === null) return null;
  if (typeof limits !== 'object' || limits === undefined || Array.isArray(limits)) {
    throw new JobsError('invalid_limits', `limits are { concurrency?, rate?: { max, perMs }, group? } or null, got ${describe(limits)}`);
  }
  const { concurrency, rate, group, ...rest } = limits as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new JobsError('invalid_limits', `unknown limit ${describe(unknown[0])}: limits are concurrency, rate and group`);
  const checked: TypeLimits = {};
  if (concurrency !== undefined) checked.concurrency = wholeCount(concurrency, 'concurrency');
  if (rate !== undefined) checked.rate = checkRate(rate, 'rate');
  if (group !== undefined) {
    if (typeof group !== 'object' || group === null || Array.isArray(group)) {
      throw new JobsError('invalid_limits', `group is { concurrency?, rate?: { max, perMs } }, got ${describe(group)}`);
    }
    const { concurrency: perGroup, rate: groupRate, ...other } = group as Record<string, unknown>;
    const extra = Object.keys(other);
    if (extra.length > 0) throw new JobsError('invalid_limits', `unknown group limit ${describe(extra[0])}: group limits are concurrency and rate`);
    const groupLimits: GroupLimits = {};
    if (perGroup !== undefined) groupLimits.concurrency = wholeCount(perGroup, 'group.concurrency');
    if (groupRate !== undefined) groupLimits.rate = checkRate(groupRate, 'group.rate');
    if (groupLimits.concurrency === undefined && groupLimits.rate === undefined) {
      throw new JobsError('invalid_limits', 'group limits set neither concurrency nor rate');
    }
    checked.group = groupLimits;
  }
  if (checked.concurrency === undefined && checked.rate === undefined && checked.group === undefined) {
    throw new JobsError('invalid_limits', 'limits set neither concurrency, rate nor group: pass null to clear them');
  }
  return checked;
}

function checkRate(rate: unknown, name: string): { max: number; perMs: number } {
  if (typeof rate !== 'object' || rate === null || Array.isArray(rate)) {
    throw new JobsError('invalid_limits', `${name} is { max, perMs }, got ${describe(rate)}`);
  }
  const { max, perMs, ...other } = rate as Record<string, unknown>;
  const extra = Object.keys(other);
  if (extra.length > 0) throw new JobsError('invalid_limits', `unknown ${name} field ${describe(extra[0])}: a rate is { max, perMs }`);
  return { max: wholeCount(max, `${name}.max`), perMs: wholeCount(perMs, `${name}.perMs`) };
}

function wholeCount(value: unknown, name: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_LIMIT) return value;
  throw new JobsError('invalid_limits', `${name} is a whole number from 1 to ${MAX_LIMIT}, got ${describe(value)}`);
}

function encodeLimits(limits: TypeLimits): Buffer {
  return Buffer.from(JSON.stringify(limits), 'utf8');
}

function decodeLimits(value: Buffer): TypeLimits {
  return JSON.parse(value.toString('utf8')) as TypeLimits;
}

/**
 * Stores `limits` for the type (null clears them), in the caller's
 * transaction. Takes held back by the type's own limits watch the limits
 * row; those held by group limits watch the pending counter, which this
 * bumps, so that every take a change may let through runs again at once.
 */
export async function writeTypeLimits(tx: Transaction, keys: TypeKeys, limits: TypeLimits | null): Promise<void> {
  tx.atomicAdd(keys.watchesPending, 1);
  if (limits === null) {
    tx.clear(keys.limits);
    tx.clear(keys.rateWindow);
    return;
  }
  if (limits.concurrency !== undefined) {
    // Read with conflicts: a take or an end committing meanwhile changes
    // the rows, so this transaction runs again and counts them anew.
    const rows = await tx.getRange(keys.activity.range().begin, keys.activity.range().end);
    tx.set(keys.runningCount, int64(rows.length));
  }
  tx.set(keys.limits, encodeLimits(limits));
}

export async function readTypeLimits(tx: ReadTransaction, keys: TypeKeys): Promise<TypeLimits | undefined> {
  const value = await tx.get(keys.limits);
  return value === undefined ? undefined : decodeLimits(value);
}

/**
 * Limits as a take reads them: with a read conflict (limits set meanwhile
 * make the take run again under them), at once where the engine answers at once.
 */
function readLimitsForTake(tx: Transaction, keys: TypeKeys): TypeLimits | undefined | Promise<TypeLimits | undefined> {
  const now = readsAtOnce(tx, 'get');
  if (now !== undefined) {
    const value = now.readNow(keys.limits, true);
    return value === undefined ? undefined : decodeLimits(value);
  }
  return tx.get(keys.limits).then((value) => (value === undefined ? undefined : decodeLimits(value)));
}

/** A job of the type (of `group`, when it has one) stopped running: one slot less in use. */
export function countEndedRun(tx: Transaction, keys: TypeKeys, once?: OncePerAttempt, group?: string): void {
  // In a write batch, one add per type for the whole batch (a read in the
  // batch may see more running than there are: a take takes fewer, never more).
  if (once?.add !== undefined) once.add(keys.runningCount, -1);
  else tx.atomicAdd(keys.runningCount, MINUS_ONE);
  if (group === undefined) return;
  once?.freedGroupSlot?.(keys);
  const key = keys.groups.runningKey(group);
  if (once?.add !== undefined) once.add(key, -1);
  else tx.atomicAdd(key, MINUS_ONE);
  if (once?.endedGroupRun !== undefined) once.endedGroupRun(keys, group);
  else tx.atomicAdd(keys.groups.endedRuns, 1);
}

/** What a take of a limited type may take now. */
interface Gate {
  /** Jobs it may take (0: none). */
  allowed: number;
  /** The rate's recent starts, when the type has a rate. */
  log: RateLog | undefined;
  /** When the rate next allows a start, if the rate is what stops it (ms, on the take's clock). */
  reopensAt: number | undefined;
  /** Whether the rate holds the take back and the concurrency does not. */
  byRateAlone: boolean;
}

function openGate(limits: TypeLimits, running: Buffer | undefined, logValue: Buffer | undefined, count: number, now: number): Gate {
  let allowed = count;
  let reopensAt: number | undefined;
  let log: RateLog | undefined;
  let concurrencyHolds = false;
  if (limits.concurrency !== undefined) {
    const inUse = running === undefined ? 0 : Math.max(0, Number(running.readBigInt64LE(0)));
    const free = Math.max(0, limits.concurrency - inUse);
    if (free < allowed) allowed = free;
    concurrencyHolds = free < count;
  }
  if (limits.rate !== undefined) {
    log = RateLog.read(logValue, limits.rate, now);
    const left = log.room(limits.rate);
    if (left < allowed) {
      allowed = left;
      if (left === 0) reopensAt = log.reopensAt(limits.rate);
    }
  }
  return { allowed, log, reopensAt, byRateAlone: !concurrencyHolds };
}

/** The body that takes up to `count` jobs, as acceptJobs runs it once limits are known; `group`: the type's group limits. */
export type TakeUpTo = (count: number, group: GroupLimits | undefined) => Promise<AcceptBatch>;

/**
 * Runs a take under the type's limits: `take` is asked for at most what
 * they allow, and the jobs it made running are counted. A take held back
 * by a limit, with requests that wait (`watchUnder` > 0), returns a watch
 * on what may let it through (the running counter, which a finish changes,
 * or the rate's log, and the limits row, which setting limits changes)
 * and, for a rate, when it next allows a start (`limitedUntil`, on the
 * clock `now` is read from: ms).
 */
export async function takeUnderLimits(tx: Transaction, keys: TypeKeys, count: number, watchUnder: number, now: number, take: TakeUpTo): Promise<AcceptBatch> {
  const limitsRead = readLimitsForTake(tx, keys);
  const limits = limitsRead instanceof Promise ? await limitsRead : limitsRead;
  if (limits === undefined || (limits.concurrency === undefined && limits.rate === undefined)) {
    const batch = await take(count, limits?.group);
    if (batch.jobs.length > 0) tx.atomicAdd(keys.runningCount, batch.jobs.length);
    return batch;
  }
  const rowsRead = getMany(tx, [keys.runningCount, keys.rateWindow]);
  const rows = Array.isArray(rowsRead) ? rowsRead : await rowsRead;
  const gate = openGate(limits, rows[0], rows[1], count, now);
  const batch = gate.allowed > 0 ? await take(gate.allowed, limits.group) : emptyBatch();
  const taken = batch.jobs.length;
  if (taken > 0) {
    tx.atomicAdd(keys.runningCount, taken);
    if (gate.log !== undefined) tx.set(keys.rateWindow, gate.log.bytes(taken));
  }
  if (gate.allowed < count && taken >= gate.allowed && taken < watchUnder) {
    // Held back by a limit, not by an empty queue: wait for a slot or for starts to leave the rate's window.
    batch.watch?.cancel();
    // Held by the concurrency: a finish subtracts from the counter (a take
    // elsewhere adds to it), which wakes the waiting takes. Held by the rate
    // alone: the log's row changes only with another take, and the time its
    // oldest starts leave the window wakes them.
    // Limits set anew may let it through too: their row changes.
    batch.watch = eitherWatch(tx.watch(gate.byRateAlone ? keys.rateWindow : keys.runningCount), tx.watch(keys.limits));
    if (gate.reopensAt !== undefined) batch.limitedUntil = gate.reopensAt;
    else if (gate.log !== undefined && gate.allowed === taken && limits.rate !== undefined) {
      const reopens = gate.log.reopensAt(limits.rate, taken);
      if (reopens !== undefined) batch.limitedUntil = reopens;
    }
  }
  return batch;
}

function emptyBatch(): AcceptBatch {
  return { jobs: [], watch: undefined, nextScheduledTime: undefined, skippedClaims: false, truncated: false, bytes: 0 };
}

function int64(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64LE(BigInt(value), 0);
  return bytes;
}

/** The type's running jobs as its counter holds them (tests and the admin read it). */
export async function readRunningCount(tx: ReadTransaction, keys: TypeKeys): Promise<number> {
  const value = await tx.get(keys.runningCount);
  return value === undefined ? 0 : Number(value.readBigInt64LE(0));
}
