// The options of `startJobs`, their defaults (couch_jobs' where it has one)
// and their validation.

import { availableParallelism } from 'node:os';
import { type Database, type EmbeddedOptions, type FoundationDbOptions, JobsError, OptionNames, type SharingOptions, checkSharingOptions } from '@jobtree/core';
import { checkRetentionOptions, type RetentionOptions, type RetentionSettings } from './retention-options.js';
import { OPERATIONS_OPTION_NAMES, type OperationsOptions, type OperationsSettings, checkOperationsOptions } from '../admin/admin-options.js';

/** Where the jobs live: the embedded store (default), a FoundationDB cluster, or a database you opened. */
export type JobsStoreOptions = (EmbeddedOptions & SharingOptions) | FoundationDbOptions | { database: Database };

export interface JobsAppSettings {
  /**
   * Host threads for the jobs actors (activity monitors, notifiers, type
   * monitors) and your pooled actors. Per-type actors share them: hundreds
   * of types do not mean hundreds of threads.
   * @default os.availableParallelism()
   */
  threads: number;
  /**
   * Worker threads running the handlers of `app.process`: one pool for every
   * job type (each type's `maxJobs` is its share of the runs, its `threads`
   * the most of these threads its runs spread over). They start with the
   * first `process`.
   * @default os.availableParallelism()
   */
  handlerThreads: number;
  /** How often the jobs server looks for new and removed types (couch_jobs' type_check_period_msec). @default 15000 */
  typeCheckPeriodMs: number;
  /** Random extra delay of each type check, up to this (type_check_max_jitter_msec). @default 5000 */
  typeCheckMaxJitterMs: number;
  /** Random extra delay of each activity check, up to this and never more than an eighth of the type timeout. @default 10000 */
  activityMonitorMaxJitterMs: number;
  /** How often an activity monitor whose type lost its timeout looks again. @default 5000 */
  missingTimeoutCheckMs: number;
  /** At most one notification per type per this many ms (type_monitor_holdoff_msec). @default 50 */
  typeMonitorHoldoffMs: number;
  /** The longest single wait of a type monitor on its type's activity; it is then renewed. @default 60000 */
  typeMonitorPollMs: number;
  /**
   * The longest the schedule ticker sleeps between two looks at the stored
   * schedules: a schedule set in another process is found within this (one
   * set in this app at once). Ticks themselves come on time, whatever this is.
   * @default 5000
   */
  schedulePollMs: number;
  /** Pause of a periodic actor before it retries after a retryable storage error. @default 100 */
  retryDelayMs: number;
  /** How long a subscription waits for a dead notifier's successor before it ends with `unavailable`. @default 30000 */
  resubscribeTimeoutMs: number;
  /** The user supervisor's restart intensity (restarts per `userPeriodMs`). @default 3 */
  userIntensity: number;
  /** @default 5000 */
  userPeriodMs: number;
  /**
   * How long a killed actor may stay in one synchronous handler before its
   * thread is terminated (see @jobtree/actors).
   * @default 1000
   */
  killTimeoutMs: number;
  /**
   * How many times faster than real time the periodic actors' clock runs
   * (type checks, activity checks). For tests and simulations: with 60, a
   * 60-second type timeout re-enqueues a silent job after about a second.
   * The store's own times (scheduled times, versionstamps) stay real.
   * @default 1
   */
  clockSpeed: number;
  /**
   * What happens when the root supervisor jobs_sup ends on its own (it was
   * killed, or it exceeded its restart intensity): the app always stops
   * (`app.stopped` resolves, calls reject with JobsError `app_stopped`, an
   * error line is logged, threads and store are released). With `'exit'` the
   * process then exits with code 1, so that a process manager (systemd,
   * Kubernetes, pm2) starts it again, like a permanent OTP application taking
   * its node down. `'stop'` is the default because a library must not end a
   * process it does not own: the program decides through `app.stopped`.
   * `app.close()` never exits the process.
   * @default 'stop'
   */
  onRootExit: RootExitAction;
  /** Retention as `startJobs({ retention })` resolved it, or false when every finished job is kept (see retention-options.ts). */
  retention: RetentionSettings | false;
}

/** What the process does once the app stopped because jobs_sup ended: keep running, or exit non-zero. */
export type RootExitAction = 'stop' | 'exit';

export type StartJobsOptions = JobsStoreOptions &
  Partial<Omit<JobsAppSettings, 'retention'>> &
  OperationsOptions & {
    /**
     * How long and how many finished jobs of each type and outcome are kept;
     * a pruner removes the rest. On by default (DEFAULT_RETENTION_POLICY:
     * succeeded and cancelled jobs a day, failed ones a week, at most 10,000
     * of each per type); `false` keeps every finished job.
     */
    retention?: RetentionOptions | false;
  };

export const DEFAULT_SETTINGS: Readonly<Omit<JobsAppSettings, 'threads' | 'handlerThreads' | 'onRootExit' | 'retention'>> = {
  typeCheckPeriodMs: 15_000,
  typeCheckMaxJitterMs: 5_000,
  activityMonitorMaxJitterMs: 10_000,
  missingTimeoutCheckMs: 5_000,
  typeMonitorHoldoffMs: 50,
  typeMonitorPollMs: 60_000,
  schedulePollMs: 5_000,
  retryDelayMs: 100,
  resubscribeTimeoutMs: 30_000,
  userIntensity: 3,
  userPeriodMs: 5_000,
  killTimeoutMs: 1_000,
  clockSpeed: 1,
};

const SETTING_NAMES = new Set<string>(['threads', 'handlerThreads', ...Object.keys(DEFAULT_SETTINGS)]);
const STORE_NAMES = new Set(['path', 'clusterFile', 'directory', 'database', 'role', 'ownerWaitMs', 'durability']);
/** For the message about an unknown option: every name, and the one meant. */
const START_OPTIONS = new OptionNames('startJobs', [...STORE_NAMES, ...SETTING_NAMES, ...OPERATIONS_OPTION_NAMES, 'onRootExit', 'retention'], {
  concurrency: 'threads',
  workers: 'threads',
  dir: 'path',
  port: "the admin endpoint's port goes in admin: { port }",
});

/** Splits and checks `startJobs`' options; every mistake is a JobsError `invalid_option`. */
export function checkStartOptions(options: unknown): { store: JobsStoreOptions; settings: JobsAppSettings; operations: OperationsSettings } {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new JobsError('invalid_option', `startJobs takes an options object, got ${show(options)}`);
  }
  const given = options as Record<string, unknown>;
  const store: Record<string, unknown> = {};
  const settings: Record<string, number> = { ...DEFAULT_SETTINGS, threads: availableParallelism(), handlerThreads: availableParallelism() };
  const operations: Record<string, unknown> = {};
  let onRootExit: RootExitAction = 'stop';
  let retention = checkRetentionOptions(undefined);
  for (const [name, value] of Object.entries(given)) {
    if (value === undefined) continue;
    if (STORE_NAMES.has(name)) {
      store[name] = value;
      continue;
    }
    if (OPERATIONS_OPTION_NAMES.has(name)) {
      operations[name] = value;
      continue;
    }
    if (name === 'onRootExit') {
      if (value !== 'stop' && value !== 'exit') throw new JobsError('invalid_option', `startJobs option onRootExit is 'stop' or 'exit', got ${show(value)}`);
      onRootExit = value;
      continue;
    }
    if (name === 'retention') {
      retention = checkRetentionOptions(value);
      continue;
    }
    if (!SETTING_NAMES.has(name)) throw new JobsError('invalid_option', START_OPTIONS.unknownIn({ [name]: value }) ?? `startJobs has no option ${show(name)}`);
    const whole = name === 'threads' || name === 'handlerThreads';
    const least = whole || name === 'userPeriodMs' || name === 'typeMonitorPollMs' || name === 'schedulePollMs' ? 1 : name === 'clockSpeed' ? Number.MIN_VALUE : 0;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < least || (whole && !Number.isInteger(value))) {
      throw new JobsError('invalid_option', `startJobs option ${name} must be a finite number >= ${least}, got ${show(value)}`);
    }
    settings[name] = value;
  }
  checkSharingOptions(store);
  return {
    store: store as JobsStoreOptions,
    settings: { ...settings, onRootExit, retention } as unknown as JobsAppSettings,
    operations: checkOperationsOptions(operations, store.path),
  };
}

function show(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
