// Schedules: recurring jobs kept in the store, one record per name
// ((schedules, name) -> JSON ScheduleRecord, see job-keys.ts).
// A record says what to add at each tick (a job type, its data and
// priority), when the ticks are (a cron expression with its time zone, or a
// fixed interval), what to do with ticks missed while nothing ran (its
// backfill policy), and how far the ticks have been handled (`lastTick`).
// This layer stores records and adds ticks' jobs; it does not read cron
// expressions: whoever writes a record or ticks it (the app's schedule
// ticker) computes the times. A tick's job id is the schedule's name and the
// tick's time (`name@2026-01-01T00:00:00.000Z`), and a tick is added in one
// transaction with the record's `lastTick`, only when neither the job nor a
// later `lastTick` is there yet: however many processes or nodes tick the
// same schedule at once, or again after a restart, each tick adds its job
// once (the transactions conflict on the record, and the loser sees the
// winner's `lastTick` on its retry).

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { cronSpelling } from './cron-spelling.js';
import type { HandleContext } from './handle-context.js';
import type { JsonValue } from './job-data.js';
import { checkId, checkPriority, checkType, describe } from './job-input.js';
import type { JobKeys } from './job-keys.js';
import type { JobsInTransaction } from './jobs-in-transaction.js';

/** When a schedule's ticks are: a cron expression (5 fields, or 6 with seconds first) in a time zone, or every `everyMs`. */
export type ScheduleSpec = { cron: string; timezone?: string } | { everyMs: number };

/**
 * Ticks missed while nothing ran (the app was down, say): `'none'` skips
 * them, `'last'` adds the latest of them, `{ withinMs }` adds every one of
 * them no older than `withinMs`. Ticks late by less than a minute (a busy
 * machine, a quick restart) are never counted as missed.
 */
export type ScheduleBackfill = 'none' | 'last' | { withinMs: number };

/** A schedule as stored. */
export interface ScheduleRecord {
  name: string;
  spec: ScheduleSpec;
  /** The type of each tick's job; it needs a type timeout when the tick comes. */
  type: string;
  /** The data of each tick's job. */
  data: JsonValue;
  priority: number;
  backfill: ScheduleBackfill;
  /** When the schedule was set (ms since the epoch): its first tick comes after it (set again with the same times, it carries on from `lastTick`). It also tells two settings of one name apart. */
  setAt: number;
  /** The latest tick handled (its job added, or skipped as missed), ms; null before the first. */
  lastTick: number | null;
  /** The next tick as its writer computed it, ms; null when there is none (a cron expression that never matches again). */
  nextTick: number | null;
}

/** What `setSchedule` takes: a record without what the store keeps itself. */
export type ScheduleInput = Omit<ScheduleRecord, 'setAt' | 'lastTick'> & { setAt?: number };

/**
 * The shortest interval of an `everyMs` schedule: one second, the finest
 * time a cron expression names (its seconds field). Each tick is a job and
 * a store transaction; Oban's and graphile-worker's crontabs stop at a
 * minute, and a job wanted more often than each second is one job that
 * loops rather than a job per tick.
 */
export const MIN_EVERY_MS = 1_000;

/** The most ticks one transaction adds. */
export const MAX_TICKS_PER_CALL = 500;

/** A tick's job id: the schedule's name and the tick's time. */
export function tickJobId(name: string, tickMs: number): string {
  return `${name}@${new Date(tickMs).toISOString()}`;
}

/** Checks a schedule record's fields (not its cron expression, which the writer has read). */
export function checkScheduleInput(input: unknown): ScheduleInput {
  if (typeof input !== 'object' || input === null) throw new JobsError('invalid_schedule', `a schedule is an object, got ${describe(input)}`);
  const record = input as Partial<ScheduleInput>;
  checkId(record.name);
  checkType(record.type);
  checkPriority(record.priority);
  checkScheduleSpecShape(record.spec);
  checkBackfill(record.backfill);
  if (record.nextTick !== null && !isTime(record.nextTick)) throw new JobsError('invalid_schedule', `nextTick is ms since the epoch or null, got ${describe(record.nextTick)}`);
  if (record.setAt !== undefined && !isTime(record.setAt)) throw new JobsError('invalid_schedule', `setAt is ms since the epoch, got ${describe(record.setAt)}`);
  try {
    JSON.stringify(record.data ?? null);
  } catch (error) {
    throw new JobsError('invalid_job_data', `a schedule's job data is JSON: ${(error as Error).message}`);
  }
  return record as ScheduleInput;
}

export function checkScheduleSpecShape(spec: unknown): ScheduleSpec {
  if (typeof spec === 'object' && spec !== null) {
    const { cron, timezone, everyMs } = spec as { cron?: unknown; timezone?: unknown; everyMs?: unknown };
    if (typeof cron === 'string' && everyMs === undefined && (timezone === undefined || typeof timezone === 'string')) return spec as ScheduleSpec;
    if (cron === undefined && timezone === undefined && typeof everyMs === 'number' && Number.isSafeInteger(everyMs) && everyMs >= 1) {
      if (everyMs < MIN_EVERY_MS) {
        throw new JobsError('invalid_schedule', `everyMs is at least ${MIN_EVERY_MS} (one second, the finest a cron expression's seconds field names), got ${everyMs}`);
      }
      return spec as ScheduleSpec;
    }
  }
  throw new JobsError('invalid_schedule', `a schedule's spec is a cron expression, { cron, timezone? } or { everyMs } (an integer >= ${MIN_EVERY_MS}), got ${describe(spec)}`);
}

export function checkBackfill(backfill: unknown): ScheduleBackfill {
  if (backfill === 'none' || backfill === 'last') return backfill;
  if (typeof backfill === 'object' && backfill !== null) {
    const { withinMs, ...rest } = backfill as { withinMs?: unknown };
    if (Object.keys(rest).length === 0 && typeof withinMs === 'number' && Number.isFinite(withinMs) && withinMs >= 0) return backfill as ScheduleBackfill;
  }
  throw new JobsError('invalid_schedule', `backfill is 'none', 'last' or { withinMs } (a number >= 0), got ${describe(backfill)}`);
}

function keptLastTick(before: ScheduleRecord, spec: ScheduleSpec): number | null {
  const same =
    'everyMs' in spec
      ? 'everyMs' in before.spec && before.spec.everyMs === spec.everyMs
      : 'cron' in before.spec && cronSpelling(before.spec.cron) === cronSpelling(spec.cron) && zoneOf(before.spec) === zoneOf(spec);
  return same ? before.lastTick : null;
}

/**
 * The time zone a cron spec ticks in. One stored without a zone (by
 * `setSchedule` directly, or by a version of the app that stored none) ticks
 * in the process's zone: set again with that zone spelt out, as `app.schedule`
 * does, its times are the same and its missed ticks still backfilled.
 */
function zoneOf(spec: { cron: string; timezone?: string }): string | undefined {
  // Intl names no zone for some `TZ` values (a path, say): the process's zone all the same.
  return spec.timezone === undefined || spec.timezone === '' ? (new Intl.DateTimeFormat().resolvedOptions().timeZone as string | undefined) : spec.timezone;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function decode(value: Buffer): ScheduleRecord {
  return JSON.parse(value.toString('utf8')) as ScheduleRecord;
}

function encode(record: ScheduleRecord): Buffer {
  return Buffer.from(JSON.stringify(record), 'utf8');
}

/** The schedule calls of one `Jobs` handle: each method is the `Jobs` method of the same name. */
export class ScheduleCalls {
  readonly #handle: HandleContext;
  readonly #view: (tx: Transaction) => JobsInTransaction;
  readonly #keys: JobKeys['schedules'];

  /** @param view the jobs API in a transaction of the handle (its `in(tx)`) */
  constructor(handle: HandleContext, keys: JobKeys, view: (tx: Transaction) => JobsInTransaction) {
    this.#handle = handle;
    this.#keys = keys.schedules;
    this.#view = view;
  }

  async setSchedule(input: ScheduleInput): Promise<ScheduleRecord> {
    this.#handle.checkOpen();
    const checked = checkScheduleInput(input);
    const key = this.#keys.pack(checked.name);
    const setAt = checked.setAt ?? Date.now();
    return this.#handle.run(async (tx) => {
      const before = await tx.get(key);
      const record: ScheduleRecord = {
        name: checked.name,
        spec: checked.spec,
        type: checked.type,
        data: checked.data ?? null,
        priority: checked.priority ?? 0,
        backfill: checked.backfill,
        setAt,
        // A schedule set again with the same times keeps how far its ticks
        // went (a tick handled is not added again, one missed while no app
        // ran is still backfilled); with other times it starts after
        // `setAt`, as a new one: a tick of its new times from before it was
        // set is no missed tick.
        lastTick: before === undefined ? null : keptLastTick(decode(before), checked.spec),
        nextTick: checked.nextTick,
      };
      tx.set(key, encode(record));
      return record;
    });
  }

  async getSchedule(name: string): Promise<ScheduleRecord | undefined> {
    this.#handle.checkOpen();
    const key = this.#keys.pack(checkId(name));
    const value = await this.#handle.run((tx) => tx.get(key));
    return value === undefined ? undefined : decode(value);
  }

  async getSchedules(): Promise<ScheduleRecord[]> {
    this.#handle.checkOpen();
    const { begin, end } = this.#keys.range();
    const rows = await this.#handle.run((tx) => tx.getRange(begin, end));
    return rows.map((row) => decode(row.value));
  }

  async removeSchedule(name: string): Promise<boolean> {
    this.#handle.checkOpen();
    const key = this.#keys.pack(checkId(name));
    return this.#handle.run(async (tx) => {
      if ((await tx.get(key)) === undefined) return false;
      tx.clear(key);
      return true;
    });
  }

  /**
   * Handles the ticks of the schedule `name` as set at `setAt` up to `upTo`
   * (ms): adds the job of each of `ticks` not handled yet, and records
   * `upTo` as its last tick and `nextTick` as its next, in one transaction.
   * Resolves with the ids of the jobs it added, or `undefined` when the
   * schedule is gone or was set again since (the caller's times are stale).
   */
  async addScheduleTicks(name: string, setAt: number, ticks: readonly number[], upTo: number, nextTick: number | null): Promise<string[] | undefined> {
    this.#handle.checkOpen();
    const key = this.#keys.pack(checkId(name));
    if (!Array.isArray(ticks) || ticks.length > MAX_TICKS_PER_CALL || !ticks.every(isTime) || !isTime(upTo) || !isTime(setAt) || (nextTick !== null && !isTime(nextTick))) {
      throw new JobsError('invalid_option', `addScheduleTicks takes at most ${MAX_TICKS_PER_CALL} tick times and times in ms since the epoch`);
    }
    return this.#handle.run(async (tx) => {
      const value = await tx.get(key);
      if (value === undefined) return undefined;
      const record = decode(value);
      if (record.setAt !== setAt) return undefined;
      const jobs = this.#view(tx);
      const added: string[] = [];
      const handled = record.lastTick ?? Number.NEGATIVE_INFINITY;
      for (const tick of ticks) {
        if (tick <= handled || tick > upTo) continue;
        const id = tickJobId(name, tick);
        // A tick's job that exists is that tick's (added by another process, say): never enqueued again.
        if ((await jobs.getJobState(record.type, id)) !== undefined) continue;
        await jobs.add(record.type, id, record.data, record.priority === 0 ? undefined : { priority: record.priority });
        added.push(id);
      }
      if (upTo > handled) tx.set(key, encode({ ...record, lastTick: upTo, nextTick }));
      else if (nextTick !== record.nextTick) tx.set(key, encode({ ...record, nextTick }));
      return added;
    });
  }
}
