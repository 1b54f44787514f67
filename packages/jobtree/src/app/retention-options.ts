// `startJobs({ retention })`: how long and how many finished jobs of each
// type and outcome the app keeps, checked and resolved into the plain data
// the pruner (pruner.ts) works from. On by default with the limits below,
// so that an app's store stays bounded; `retention: false` keeps every
// finished job, as a store used through openJobs alone does.

import { JobsError, MAX_PRUNE_BATCH, type JobOutcome, type PruneLimits } from '@jobtree/core';
import { DEFAULT_MAX_REMOVALS_PER_SECOND } from './prune-pace.js';

/** Keep finished jobs for ever by this measure. */
export const FOREVER = 'forever';

/** How long and how many finished jobs of one outcome are kept; a missing field, `'forever'` or `Infinity` keeps every job by that measure. */
export interface RetentionLimits {
  /** Jobs that finished longer ago than this many seconds are removed. */
  maxAgeSeconds?: number | typeof FOREVER;
  /** Past this many, the oldest are removed. */
  maxCount?: number | typeof FOREVER;
}

/** What a type keeps of its finished jobs, by outcome; `false` for an outcome keeps all its jobs. An outcome left out takes the default's. */
export interface RetentionPolicy {
  succeeded?: RetentionLimits | false;
  failed?: RetentionLimits | false;
  cancelled?: RetentionLimits | false;
}

export interface RetentionOptions {
  /** The policy of every type not in `types`. @default DEFAULT_RETENTION_POLICY */
  default?: RetentionPolicy | false;
  /** Policies by type; `false` keeps every finished job of the type. */
  types?: Record<string, RetentionPolicy | false>;
  /** Seconds between the pruner's rounds (of the app's clock). @default 60 */
  intervalSeconds?: number;
  /** The most jobs one prune transaction removes, 1 to 500. @default 500 */
  batchSize?: number;
  /**
   * The most finished jobs the pruner removes a second (a pause after each
   * batch keeps it within), so that it takes a bounded share of the store
   * from the hot path; `Infinity` runs its batches back to back.
   * @default DEFAULT_MAX_REMOVALS_PER_SECOND (1,000)
   */
  maxRemovalsPerSecond?: number;
}

/** The default policy: a day of succeeded and cancelled jobs, a week of failed ones, at most 10,000 of each per type. */
export const DEFAULT_RETENTION_POLICY: Readonly<Required<Record<JobOutcome, Readonly<RetentionLimits>>>> = Object.freeze({
  succeeded: Object.freeze({ maxAgeSeconds: 86_400, maxCount: 10_000 }),
  failed: Object.freeze({ maxAgeSeconds: 7 * 86_400, maxCount: 10_000 }),
  cancelled: Object.freeze({ maxAgeSeconds: 86_400, maxCount: 10_000 }),
});
export const DEFAULT_RETENTION_INTERVAL_SECONDS = 60;

/** A policy resolved: each outcome's limits (Infinity for ever), or none when the outcome keeps every job. */
export type ResolvedPolicy = Partial<Record<JobOutcome, Required<PruneLimits>>>;

/** Retention as the pruner works from it: plain data, so that it crosses to an actor's thread. */
export interface RetentionSettings {
  default: ResolvedPolicy;
  types: Record<string, ResolvedPolicy>;
  intervalMs: number;
  batchSize: number;
  /** Infinity when uncapped. */
  maxRemovalsPerSecond: number;
}

const OUTCOMES: readonly JobOutcome[] = ['succeeded', 'failed', 'cancelled'];

/** The policy of `type`: its own, else the default. */
export function policyOf(settings: RetentionSettings, type: string): ResolvedPolicy {
  return Object.hasOwn(settings.types, type) ? (settings.types[type] as ResolvedPolicy) : settings.default;
}

/** Checks `startJobs`' retention option; `undefined` is the default retention, `false` none. Every mistake is a JobsError `invalid_option`. */
export function checkRetentionOptions(value: unknown): RetentionSettings | false {
  if (value === false) return false;
  const given =
    value === undefined ? {} : objectOf(value, 'retention', '{ default?, types?, intervalSeconds?, batchSize?, maxRemovalsPerSecond? } or false');
  for (const name of Object.keys(given)) {
    if (!['default', 'types', 'intervalSeconds', 'batchSize', 'maxRemovalsPerSecond'].includes(name)) {
      throw new JobsError(
        'invalid_option',
        `startJobs has no retention option ${JSON.stringify(name)}: they are default, types, intervalSeconds, batchSize and maxRemovalsPerSecond`,
      );
    }
  }
  const defaults = resolvePolicy(given.default, DEFAULT_RETENTION_POLICY, 'retention.default');
  const types: Record<string, ResolvedPolicy> = {};
  if (given.types !== undefined) {
    for (const [type, policy] of Object.entries(objectOf(given.types, 'retention.types', '{ [type]: policy or false }'))) {
      types[type] = resolvePolicy(policy, defaults, `retention.types[${JSON.stringify(type)}]`);
    }
  }
  const interval = given.intervalSeconds ?? DEFAULT_RETENTION_INTERVAL_SECONDS;
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval <= 0) {
    throw new JobsError('invalid_option', `startJobs option retention.intervalSeconds is a finite number of seconds > 0, got ${show(interval)}`);
  }
  const batchSize = given.batchSize ?? MAX_PRUNE_BATCH;
  if (!Number.isSafeInteger(batchSize) || (batchSize as number) < 1 || (batchSize as number) > MAX_PRUNE_BATCH) {
    throw new JobsError('invalid_option', `startJobs option retention.batchSize is an integer from 1 to ${MAX_PRUNE_BATCH}, got ${show(batchSize)}`);
  }
  const rate = given.maxRemovalsPerSecond ?? DEFAULT_MAX_REMOVALS_PER_SECOND;
  if (typeof rate !== 'number' || Number.isNaN(rate) || rate <= 0) {
    throw new JobsError('invalid_option', `startJobs option retention.maxRemovalsPerSecond is a number > 0 or Infinity, got ${show(rate)}`);
  }
  return { default: defaults, types, intervalMs: interval * 1000, batchSize: batchSize as number, maxRemovalsPerSecond: rate };
}

/** A policy resolved over `base` (what an outcome it leaves out keeps); `false` keeps everything. */
function resolvePolicy(value: unknown, base: ResolvedPolicy | Readonly<Record<JobOutcome, Readonly<RetentionLimits>>>, where: string): ResolvedPolicy {
  if (value === false) return {};
  if (value === undefined) return resolvePolicy({}, base, where);
  const given = objectOf(value, where, '{ succeeded?, failed?, cancelled? } or false');
  for (const name of Object.keys(given)) {
    if (!(OUTCOMES as readonly string[]).includes(name)) {
      throw new JobsError('invalid_option', `startJobs option ${where} has no outcome ${JSON.stringify(name)}: they are succeeded, failed and cancelled`);
    }
  }
  const resolved: ResolvedPolicy = {};
  for (const outcome of OUTCOMES) {
    const limits = given[outcome] === undefined ? base[outcome] : given[outcome];
    if (limits === undefined || limits === false) continue;
    resolved[outcome] = resolveLimits(limits, `${where}.${outcome}`);
  }
  return resolved;
}

function resolveLimits(value: unknown, where: string): Required<PruneLimits> {
  const given = objectOf(value, where, '{ maxAgeSeconds?, maxCount? } or false');
  for (const name of Object.keys(given)) {
    if (name !== 'maxAgeSeconds' && name !== 'maxCount') {
      throw new JobsError('invalid_option', `startJobs option ${where} has no limit ${JSON.stringify(name)}: they are maxAgeSeconds and maxCount`);
    }
  }
  return { maxAgeSeconds: limitOf(given.maxAgeSeconds, `${where}.maxAgeSeconds`, false), maxCount: limitOf(given.maxCount, `${where}.maxCount`, true) };
}

function limitOf(value: unknown, where: string, whole: boolean): number {
  if (value === undefined || value === FOREVER || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (whole && !Number.isInteger(value))) {
    const what = whole ? 'an integer >= 0' : 'a number of seconds >= 0';
    throw new JobsError('invalid_option', `startJobs option ${where} is ${what}, 'forever' or Infinity, got ${show(value)}`);
  }
  return value;
}

function objectOf(value: unknown, where: string, shape: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new JobsError('invalid_option', `startJobs option ${where} is ${shape}, got ${show(value)}`);
  }
  return value as Record<string, unknown>;
}

function show(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
