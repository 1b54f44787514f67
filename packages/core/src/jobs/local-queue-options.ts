// The options of a local queue for each of its two kinds of consumer,
// checked and resolved once into the settings the queue runs on.

import { JobsError } from '../errors.js';
import { OptionNames } from '../option-names.js';
import { MAX_ACCEPT_MANY } from './accept-batcher.js';
import type { Job } from './interfaces.js';
import type { Jobs } from './jobs.js';
import { describe } from './job-input.js';

/**
 * What a local queue uses of the jobs API: a `Jobs` handle, or anything
 * that has these calls with the same meaning (the application of
 * `jobtree` has them all). `role`, when the source has it, bounds the
 * spare jobs of `slots` mode (see spare-jobs.ts).
 */
export type LocalQueueSource = Pick<Jobs, 'acceptMany' | 'update' | 'finish' | 'finishMany' | 'resubmit' | 'getTypeTimeout'> & Partial<Pick<Jobs, 'role'>>;

/** A queue for workers that each take one job at a time with `take()`. */
export interface LocalQueueOptions {
  /**
   * Jobs taken but not yet handed to a worker, at most (including those of
   * an accept in flight). A batch is taken once no more than half of this
   * is left. At most {@link MAX_ACCEPT_MANY}.
   * @default 500
   */
  size?: number;
  /**
   * Milliseconds a taken job may wait in the queue before it is given back
   * to the store's queue. @default half the type's activity timeout, or
   * 30,000 for a type without one
   */
  holdMs?: number;
  /** As `accept`'s `noSchedule`: any pending job qualifies whatever its scheduled time. @default false */
  noSchedule?: boolean;
}

/**
 * The owner of a queue that starts jobs into slots of its own (the
 * processors' scheduler), instead of workers each waiting in `take()`. The
 * queue takes jobs for the owner's free slots, and a few more while its
 * runs end quickly (as many as free up during two takes, see
 * `LocalQueue.ended`), so that a slot that frees is filled at once rather
 * than after a take's commit. Arriving jobs are offered to the owner
 * first; it takes the ones the queue holds with `takeReady` as its slots
 * free up.
 */
export interface LocalQueueSlots {
  /** The slots the owner has free, for which it would take jobs now. */
  free(): number;
  /**
   * Jobs arrived while the queue held none: the owner starts what it can,
   * from the front of `jobs`, and says how many it took. The queue holds
   * the rest.
   */
  offer(jobs: readonly Job[]): number;
  /** A take failed. The queue takes again on the next `wake()`, or after `waitMs` while slots are free. */
  failed(error: unknown): void;
  /** When the owner decides what is due by a clock of its own: accepts take jobs scheduled up to this time (epoch seconds) only. */
  maxSchedTime?(): number | undefined;
}

/** A queue whose jobs an owner starts into slots of its own. */
export interface LocalQueueSlotOptions {
  slots: LocalQueueSlots;
  /** As for workers: @default half the type's activity timeout */
  holdMs?: number;
  /** Milliseconds one take waits for a job when the store has none due. @default half the hold */
  waitMs?: number;
}

/**
 * What a local queue is doing, named as graphile-worker's local queue names
 * its modes:
 * - `waiting`: the last take found fewer due jobs than it asked for, or it
 *   found none, waited, and was handed every job the write that served it
 *   enqueued (or no take was made yet): one take at a time, which waits for
 *   a job while anyone waits for one;
 * - `taking`: the last take was full: takes do not wait, and two may be in
 *   flight, the next one read while the previous one commits;
 * - `stopped`: it takes no more jobs and hands none out.
 */
export type LocalQueueMode = 'waiting' | 'taking' | 'stopped';

/** Who takes a queue's jobs: workers one at a time with `take()`, or an owner's slots (`takeReady`). */
export type LocalQueueConsumer = 'workers' | 'slots';

/** A queue's options, checked, with their defaults. */
export interface LocalQueueSettings {
  readonly consumer: LocalQueueConsumer;
  readonly slots: LocalQueueSlots | undefined;
  /** Workers: the most jobs held and asked for. Slots: the most one take asks for. */
  readonly size: number;
  /** Undefined: half the type's activity timeout, read at the first take. */
  readonly holdMs: number | undefined;
  /** Undefined: half the hold. */
  readonly waitMs: number | undefined;
  readonly noSchedule: boolean;
}

/** The queue's default size: 500 jobs share one accept transaction and its durable commit. */
export const DEFAULT_LOCAL_QUEUE_SIZE = 500;

const WORKER_OPTIONS = new OptionNames('LocalQueue', ['size', 'holdMs', 'noSchedule'], { batchSize: 'size', max: 'size' });
const SLOT_OPTIONS = new OptionNames('LocalQueue', ['slots', 'holdMs', 'waitMs']);

/** The settings of a queue; a bad or unknown option throws `invalid_option`. */
export function resolveLocalQueueOptions(options: LocalQueueOptions | LocalQueueSlotOptions): LocalQueueSettings {
  if (typeof options !== 'object' || options === null) {
    throw new JobsError('invalid_option', `the options of LocalQueue are an object, got ${describe(options)}`);
  }
  if ('slots' in options && options.slots !== undefined) {
    SLOT_OPTIONS.check(options);
    const { slots } = options;
    const holdMs = checkMs('holdMs', options.holdMs);
    if (typeof slots !== 'object' || slots === null || typeof slots.free !== 'function' || typeof slots.offer !== 'function' || typeof slots.failed !== 'function') {
      throw new JobsError('invalid_option', 'slots needs free(), offer() and failed()');
    }
    return { consumer: 'slots', slots, size: MAX_ACCEPT_MANY, holdMs, waitMs: checkMs('waitMs', options.waitMs), noSchedule: false };
  }
  WORKER_OPTIONS.check(options);
  const workers = options as LocalQueueOptions;
  const size = workers.size ?? DEFAULT_LOCAL_QUEUE_SIZE;
  if (!Number.isSafeInteger(size) || size < 1 || size > MAX_ACCEPT_MANY) {
    throw new JobsError('invalid_option', `a local queue's size is an integer from 1 to ${MAX_ACCEPT_MANY}, got ${describe(size)}`);
  }
  const holdMs = checkMs('holdMs', workers.holdMs);
  if (workers.noSchedule !== undefined && typeof workers.noSchedule !== 'boolean') {
    throw new JobsError('invalid_option', `noSchedule is a boolean, got ${describe(workers.noSchedule)}`);
  }
  return { consumer: 'workers', slots: undefined, size, holdMs, waitMs: undefined, noSchedule: workers.noSchedule === true };
}

function checkMs(name: string, value: unknown): number | undefined {
  if (value !== undefined && !(typeof value === 'number' && value > 0 && Number.isFinite(value))) {
    throw new JobsError('invalid_option', `${name} is a number of milliseconds > 0, got ${describe(value)}`);
  }
  return value;
}
