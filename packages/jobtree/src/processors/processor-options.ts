// The options of processors and their scheduler (the scheduling ones are
// the `replicator` config section of couch_replicator_scheduler): their
// names, defaults and validation, resolved once into the settings that the
// scheduler and its parts (schedule table, local queue, heartbeats, run
// outcomes) all read.

import { availableParallelism } from 'node:os';
import { OptionNames } from '@jobtree/core';
import { systemClock } from '../clock.js';
import { SchedulerError } from './errors.js';
import type { Clock, ProcessorOptions, SchedulerOptions } from './interfaces.js';
import { type TypeRetryPolicy, checkMaxRunMs, checkRetryIf, resolveBackoff } from './retry-policy.js';

/** Crashes in a row a one-shot job may have before it is given up. */
export const DEFAULT_ONE_SHOT_ATTEMPTS = 3;
export const DEFAULT_GRACE_MS = 5_000;
export const DEFAULT_STUCK_THREAD_MS = 10_000;
export const DEFAULT_BLOCKED_LOOP_MS = 200;
const MAX_ACCEPT_WAIT_MS = 1_000;

export type ResolvedSchedulerOptions = Required<SchedulerOptions>;

export const DEFAULT_SCHEDULER_OPTIONS: Readonly<ResolvedSchedulerOptions> = Object.freeze({
  maxJobs: 500,
  maxChurn: 20,
  interval: 60_000,
  maxHistory: 20,
  healthThreshold: 120,
});

/** Every processor option with its default. */
export interface ResolvedProcessorOptions extends Readonly<ResolvedSchedulerOptions>, TypeRetryPolicy {
  /** Undefined: by the handler (a function on the main thread, a definition or module in threads). */
  readonly runIn: 'main' | 'threads' | undefined;
  readonly blockedLoopMs: number;
  readonly threads: number;
  readonly graceMs: number;
  readonly stuckThreadMs: number;
  /** Undefined: a third of the type's activity timeout (see {@link SchedulerSettings}). */
  readonly heartbeatMs: number | undefined;
  readonly acceptWaitMs: number;
  readonly clock: Clock;
}

/** What one scheduler runs on: its resolved options, and what follows from its type's activity timeout. */
export interface SchedulerSettings extends ResolvedProcessorOptions {
  /** Between heartbeats of the held jobs: the option, or a third of the type's activity timeout. */
  readonly heartbeatMs: number;
  /** The local queue gives back a job it held this long without a slot for it: half the type's activity timeout. */
  readonly holdMs: number;
}

const PROCESSOR_OPTION_NAMES = [
  'maxJobs',
  'maxChurn',
  'interval',
  'maxHistory',
  'healthThreshold',
  'attempts',
  'backoff',
  'retryIf',
  'maxRunMs',
  'runIn',
  'blockedLoopMs',
  'threads',
  'graceMs',
  'stuckThreadMs',
  'heartbeatMs',
  'acceptWaitMs',
  'clock',
];
/** What people reach for under other job queues' names. */
const PROCESSOR_ADVICE = {
  concurrency: 'maxJobs',
  parallelism: 'maxJobs',
  workers: 'threads',
  retries: 'attempts',
  maxAttempts: 'attempts',
  timeout: "a run's longest time is maxRunMs; a job's activity timeout is its type's: setTypeTimeout(type, seconds)",
  retryDelay: 'backoff',
  delay: 'backoff',
  shouldRetry: 'retryIf',
  maxDurationMs: 'maxRunMs',
};
/** `app.process`' options. */
export const PROCESSOR_OPTIONS = new OptionNames('process', PROCESSOR_OPTION_NAMES, PROCESSOR_ADVICE);
/** `startScheduler`'s: the processor's, and what it runs. */
export const START_SCHEDULER_OPTIONS = new OptionNames('startScheduler', ['jobs', 'type', 'handler', ...PROCESSOR_OPTION_NAMES], PROCESSOR_ADVICE);
const ATTEMPTS_OPTIONS = new OptionNames('attempts', ['oneShot', 'continuous']);
const STOP_OPTIONS = new OptionNames('stop', ['graceMs'], { grace: 'graceMs', timeout: 'graceMs' });

/**
 * The objects resolved here: resolving one again is free and gives the same
 * object, so a schedule table made from a scheduler's settings reads them.
 */
const RESOLVED = new WeakSet<object>();

function resolved<O extends object>(options: O): O {
  RESOLVED.add(Object.freeze(options));
  return options;
}

/** Refuses a key of `options` that `names` does not list, with `invalid_option` naming it. */
export function checkOptionNames(options: object, names: OptionNames): void {
  const unknown = names.unknownIn(options);
  if (unknown !== undefined) throw new SchedulerError('invalid_option', unknown);
}

/** `stop`'s options: an object with at most `graceMs`. */
export function checkStopOptions(options: unknown): { graceMs?: number } {
  if (typeof options !== 'object' || options === null) {
    throw new SchedulerError('invalid_option', `stop's options are an object, got ${describe(options)}`);
  }
  checkOptionNames(options, STOP_OPTIONS);
  return options;
}

/** The scheduling options with defaults filled in; a bad value throws `invalid_option` naming it. */
export function resolveSchedulerOptions(options: SchedulerOptions = {}): Readonly<ResolvedSchedulerOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new SchedulerError('invalid_option', `scheduler options are an object, got ${String(options)}`);
  }
  if (RESOLVED.has(options)) return options as ResolvedSchedulerOptions;
  const chosen = { ...DEFAULT_SCHEDULER_OPTIONS };
  for (const key of Object.keys(DEFAULT_SCHEDULER_OPTIONS) as (keyof ResolvedSchedulerOptions)[]) {
    const value = options[key];
    if (value !== undefined) chosen[key] = value;
  }
  // maxJobs 0 is allowed: a scheduler that runs nothing (couch_replicator_scheduler allows it too).
  checkInteger('maxJobs', chosen.maxJobs, 0);
  // maxChurn 0 is allowed and disables rotation.
  checkInteger('maxChurn', chosen.maxChurn, 0);
  checkInteger('maxHistory', chosen.maxHistory, 1);
  checkNumber('interval', chosen.interval, 1);
  checkNumber('healthThreshold', chosen.healthThreshold, 0);
  return resolved(chosen);
}

/** Every processor option with its default; an unknown key (`names`), or a bad value, throws `invalid_option` naming it. */
export function resolveProcessorOptions(options: ProcessorOptions = {}, names: OptionNames = PROCESSOR_OPTIONS): ResolvedProcessorOptions {
  if (typeof options !== 'object' || options === null) {
    throw new SchedulerError('invalid_option', `the options of ${names.what} are an object, got ${describe(options)}`);
  }
  checkOptionNames(options, names);
  const scheduling = resolveSchedulerOptions({
    maxJobs: options.maxJobs,
    maxChurn: options.maxChurn,
    interval: options.interval,
    maxHistory: options.maxHistory,
    healthThreshold: options.healthThreshold,
  });
  const attempts = resolveAttempts(options.attempts);
  const backoff = resolveBackoff(options.backoff);
  const retryIf = checkRetryIf(options.retryIf);
  const maxRunMs = checkMaxRunMs(options.maxRunMs);
  const runIn = options.runIn;
  if (runIn !== undefined && runIn !== 'main' && runIn !== 'threads') {
    throw new SchedulerError('invalid_option', `runIn is 'main' or 'threads', got ${describe(runIn)}`);
  }
  const blockedLoopMs = options.blockedLoopMs ?? DEFAULT_BLOCKED_LOOP_MS;
  checkNumber('blockedLoopMs', blockedLoopMs, 1);
  const threads = options.threads ?? Math.max(1, Math.min(scheduling.maxJobs, availableParallelism()));
  checkInteger('threads', threads, 1);
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  checkNumber('graceMs', graceMs, 0);
  const stuckThreadMs = options.stuckThreadMs ?? DEFAULT_STUCK_THREAD_MS;
  if (stuckThreadMs !== Number.POSITIVE_INFINITY) checkNumber('stuckThreadMs', stuckThreadMs, 1);
  if (options.heartbeatMs !== undefined) checkNumber('heartbeatMs', options.heartbeatMs, 1);
  const acceptWaitMs = options.acceptWaitMs ?? Math.min(scheduling.interval, MAX_ACCEPT_WAIT_MS);
  checkNumber('acceptWaitMs', acceptWaitMs, 1);
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw new SchedulerError('invalid_option', 'clock needs now(), setTimeout(), and clearTimeout()');
  }
  return resolved({ ...scheduling, attempts, backoff, retryIf, maxRunMs, runIn, blockedLoopMs, threads, graceMs, stuckThreadMs, heartbeatMs: options.heartbeatMs, acceptWaitMs, clock });
}

/** The settings of a scheduler of a type whose activity timeout is `typeTimeoutMs`. */
export function schedulerSettings(options: ResolvedProcessorOptions, typeTimeoutMs: number): SchedulerSettings {
  return resolved({
    ...options,
    heartbeatMs: options.heartbeatMs ?? Math.max(1, typeTimeoutMs / 3),
    holdMs: typeTimeoutMs / 2,
  });
}

function resolveAttempts(attempts: ProcessorOptions['attempts']): { oneShot: number; continuous: number } {
  if (attempts === undefined) return { oneShot: DEFAULT_ONE_SHOT_ATTEMPTS, continuous: Number.POSITIVE_INFINITY };
  if (typeof attempts === 'number') {
    checkAttempts('attempts', attempts);
    return { oneShot: attempts, continuous: attempts };
  }
  if (typeof attempts !== 'object' || attempts === null) {
    throw new SchedulerError('invalid_option', `attempts is a number or { oneShot, continuous }, got ${describe(attempts)}`);
  }
  checkOptionNames(attempts, ATTEMPTS_OPTIONS);
  const chosen = {
    oneShot: attempts.oneShot ?? DEFAULT_ONE_SHOT_ATTEMPTS,
    continuous: attempts.continuous ?? Number.POSITIVE_INFINITY,
  };
  checkAttempts('attempts.oneShot', chosen.oneShot);
  checkAttempts('attempts.continuous', chosen.continuous);
  return chosen;
}

function checkAttempts(name: string, value: number): void {
  if (value !== Number.POSITIVE_INFINITY) checkInteger(name, value, 1);
}

function checkInteger(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new SchedulerError('invalid_option', `${name} is an integer >= ${min}, got ${describe(value)}`);
  }
}

function checkNumber(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new SchedulerError('invalid_option', `${name} is a finite number >= ${min}, got ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
