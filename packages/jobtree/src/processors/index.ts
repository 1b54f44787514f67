// The public surface of the scheduler and its processors, picked by hand.
export { SchedulerError, type SchedulerErrorCode } from './errors.js';
export {
  BACKOFF_BASE_MS,
  MAX_BACKOFF_EXPONENT,
  type HistoryEvent,
  type HistoryEventType,
  backoffMs,
  consecutiveCrashes,
  lastStarted,
  latestCrashTime,
  notRecentlyCrashed,
  oldestJobFirst,
  withEvent,
} from './history.js';
export {
  DEFAULT_GRACE_MS,
  DEFAULT_ONE_SHOT_ATTEMPTS,
  DEFAULT_SCHEDULER_OPTIONS,
  DEFAULT_STUCK_THREAD_MS,
  type ResolvedSchedulerOptions,
  resolveSchedulerOptions,
} from './processor-options.js';
export {
  type CrashResult,
  type RescheduleResult,
  type ScheduleEntry,
  ScheduleTable,
  type SchedulerStats,
} from './schedule-table.js';
export type {
  AbortCause,
  Attempts,
  Clock,
  Handler,
  HandlerAbort,
  HandlerContext,
  HandlerDefinition,
  HandlerFor,
  HandlerJob,
  HistoryEventJson,
  JobSummary,
  ProcessorOptions,
  SchedulerEventTypes,
  SchedulerJobs,
  SchedulerOptions,
  StartSchedulerOptions,
  StopOptions,
} from './interfaces.js';
export { HandlerAbortError } from './errors.js';
export { NonRetryableError } from './non-retryable-error.js';
export {
  type Backoff,
  type BackoffFunction,
  type RetryPredicate,
  type RunFailure,
  DEFAULT_BACKOFF,
  scheduleFunction,
  scheduledDelayMs,
} from './retry-policy.js';
export { defineHandler } from './define-handler.js';
export { Scheduler, startScheduler } from './scheduler.js';
