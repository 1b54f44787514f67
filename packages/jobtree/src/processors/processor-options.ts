// The processor options beyond the scheduler's own, with their defaults and
// validation.

import { availableParallelism } from 'node:os';
import { OptionNames } from '@jobtree/core';
import { systemClock } from '../clock.js';
import { SchedulerError } from './errors.js';
import type { Clock, ProcessorOptions } from './interfaces.js';
import { type ResolvedSchedulerOptions, checkInteger, checkNumber, describe, resolveSchedulerOptions } from './scheduler-options.js';

/** Crashes in a row a one-shot job may have before it is given up. */
export const DEFAULT_ONE_SHOT_ATTEMPTS = 3;
export const DEFAULT_GRACE_MS = 5_000;
export const DEFAULT_STUCK_THREAD_MS = 10_000;
const MAX_ACCEPT_WAIT_MS = 1_000;

const PROCESSOR_OPTION_NAMES = [
  'maxJobs',
  'maxChurn',
  'interval',
  'maxHistory',
  'healthThreshold',
  'attempts',
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
  timeout: "a job's activity timeout is its type's: setTypeTimeout(type, seconds)",
};
/** `app.process`' options. */
export const PROCESSOR_OPTIONS = new OptionNames('process', PROCESSOR_OPTION_NAMES, PROCESSOR_ADVICE);
/** `startScheduler`'s: the processor's, and what it runs. */
export const START_SCHEDULER_OPTIONS = new OptionNames('startScheduler', ['jobs', 'type', 'handler', ...PROCESSOR_OPTION_NAMES], PROCESSOR_ADVICE);
const ATTEMPTS_OPTIONS = new OptionNames('attempts', ['oneShot', 'continuous']);
const STOP_OPTIONS = new OptionNames('stop', ['graceMs'], { grace: 'graceMs', timeout: 'graceMs' });

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

export interface ResolvedProcessorOptions {
  scheduler: ResolvedSchedulerOptions;
  attempts: { oneShot: number; continuous: number };
  threads: number;
  graceMs: number;
  stuckThreadMs: number;
  /** Undefined: derived from the type's timeout at start. */
  heartbeatMs: number | undefined;
  acceptWaitMs: number;
  clock: Clock;
}

/** The options with defaults filled in; an unknown key (`names`), or a bad value, throws `invalid_option` naming it. */
export function resolveProcessorOptions(options: ProcessorOptions = {}, names: OptionNames = PROCESSOR_OPTIONS): ResolvedProcessorOptions {
  if (typeof options !== 'object' || options === null) {
    throw new SchedulerError('invalid_option', `the options of ${names.what} are an object, got ${describe(options)}`);
  }
  checkOptionNames(options, names);
  const scheduler = resolveSchedulerOptions({
    maxJobs: options.maxJobs,
    maxChurn: options.maxChurn,
    interval: options.interval,
    maxHistory: options.maxHistory,
    healthThreshold: options.healthThreshold,
  });
  const attempts = resolveAttempts(options.attempts);
  const threads = options.threads ?? Math.max(1, Math.min(scheduler.maxJobs, availableParallelism()));
  checkInteger('threads', threads, 1);
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  checkNumber('graceMs', graceMs, 0);
  const stuckThreadMs = options.stuckThreadMs ?? DEFAULT_STUCK_THREAD_MS;
  if (stuckThreadMs !== Number.POSITIVE_INFINITY) checkNumber('stuckThreadMs', stuckThreadMs, 1);
  if (options.heartbeatMs !== undefined) checkNumber('heartbeatMs', options.heartbeatMs, 1);
  const acceptWaitMs = options.acceptWaitMs ?? Math.min(scheduler.interval, MAX_ACCEPT_WAIT_MS);
  checkNumber('acceptWaitMs', acceptWaitMs, 1);
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw new SchedulerError('invalid_option', 'clock needs now(), setTimeout(), and clearTimeout()');
  }
  return { scheduler, attempts, threads, graceMs, stuckThreadMs, heartbeatMs: options.heartbeatMs, acceptWaitMs, clock };
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
  const resolved = {
    oneShot: attempts.oneShot ?? DEFAULT_ONE_SHOT_ATTEMPTS,
    continuous: attempts.continuous ?? Number.POSITIVE_INFINITY,
  };
  checkAttempts('attempts.oneShot', resolved.oneShot);
  checkAttempts('attempts.continuous', resolved.continuous);
  return resolved;
}

function checkAttempts(name: string, value: number): void {
  if (value !== Number.POSITIVE_INFINITY) checkInteger(name, value, 1);
}
