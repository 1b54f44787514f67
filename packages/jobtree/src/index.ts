// The public surface of `jobtree`, picked by hand: the jobs application
// (`startJobs`), handlers and their scheduler, the admin endpoint, and, so
// that one import is enough, everything @jobtree/core, @jobtree/actors and
// @jobtree/supervisor offer.

export * from '@jobtree/core';
export * from '@jobtree/actors';
export * from '@jobtree/supervisor';
// Both core and actors have one (each throwing its own error); core's is the jobs API's.
export { OptionNames } from '@jobtree/core';

// the jobs application
export { startJobs, JobsApp, SYSTEM_NAMES, type AppScheduler, type JobsAppSystem, type JobsAppEventTypes } from './app/jobs-app.js';
export type { StartJobsOptions, JobsAppSettings, JobsStoreOptions, RootExitAction } from './app/app-options.js';
export type { AppStop } from './app/app-stop.js';
export type { ScheduleInfo, ScheduleOptions } from './app/app-schedules.js';
export { Subscription, type JobStateChange } from './app/subscription.js';
export { FlowSubscription, type FlowStateChange } from './app/flow-subscription.js';
export { type JobEvent, type SubscriptionState, isJobEvent } from './app/job-event.js';
export { subscribeJob, unsubscribeJob, type ActorSubscription } from './app/actor-subscription.js';
export {
  subscribeFlowJobs,
  unsubscribeFlowJobs,
  flowJobOf,
  type ActorFlowJob,
  type ActorFlowSubscription,
} from './app/actor-flow-subscription.js';
export { jobsCore, type JobsCore } from './app/bridge-client.js';
export type { JobsBridge, BridgeAcceptOptions, JobSnapshot, NotifierSnapshot } from './app/jobs-bridge.js';
export { formatTree, type TreeNode } from './app/live-tree.js';

// processors: handlers run by the scheduler (couch_replicator_scheduler's re-creation)
// What a handler module needs comes from the light `jobtree/handler` entry, the same objects.
export { defineHandler, HandlerAbortError, NonRetryableError, SchedulerError } from './handler.js';
export {
  DEFAULT_GRACE_MS,
  DEFAULT_ONE_SHOT_ATTEMPTS,
  DEFAULT_SCHEDULER_OPTIONS,
  Scheduler,
  backoffMs,
  startScheduler,
} from './processors/index.js';
export type {
  AbortCause,
  Attempts,
  Backoff,
  BackoffFunction,
  RetryPredicate,
  RunFailure,
  Handler,
  HandlerContext,
  HandlerDefinition,
  HandlerFor,
  HandlerJob,
  HistoryEventJson,
  JobSummary,
  ProcessorOptions,
  SchedulerErrorCode,
  SchedulerEventTypes,
  SchedulerJobs,
  SchedulerOptions,
  SchedulerStats,
  StartSchedulerOptions,
  StopOptions,
} from './processors/index.js';

// operations: the admin endpoint, metrics and logs of a jobs app
export type { AdminOptions, LogLevel, OperationsOptions } from './admin/admin-options.js';
export type { AdminEndpoint } from './admin/app-operations.js';
export { AdminError, type AdminErrorCode } from './admin/errors.js';
export { type AdminRecord, ADMIN_RECORD_FILE, ADMIN_TOKEN_FILE, processAlive, readAdminRecord, readAdminToken } from './admin/admin-record.js';
export type { JobTotals } from './admin/job-activity.js';
export type { TypeQueue } from './admin/queue-sampler.js';

// the `jobtree` command line as a function (for embedding and tests)
export { runCli, type CliIo } from './cli/program.js';
export { CliError, type CliErrorCode } from './cli/cli-error.js';
export { connect, type TargetOptions } from './cli/connect.js';
export type { Backend, JobView, JobsView, KillReport, SchedulerReport, SchedulesView, StatusView, TypeView, TypesView } from './cli/backend.js';
