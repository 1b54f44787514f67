// The public surface of @jobtree/supervisor, picked by hand.
export { SupervisorError, type SupervisorErrorCode } from './errors.js';
export type {
  ActorStart,
  AnyActorDefinition,
  AutoShutdown,
  AutoShutdownEvent,
  ChildCounts,
  ChildExitedEvent,
  ChildInfo,
  ChildRestartedEvent,
  ChildSpawnOptions,
  ChildSpec,
  ChildStartFunction,
  ChildStartedEvent,
  ChildType,
  IntensityReachedEvent,
  ResolvedChildSpec,
  RestartType,
  Shutdown,
  Strategy,
  SupervisorEventTypes,
  SupervisorEvents,
  SupervisorSpec,
} from './interfaces.js';
export {
  type StartSupervisorOptions,
  Supervisor,
  type SupervisorChildOptions,
  type SupervisorChildSpec,
  actorStart,
  createSupervisorEvents,
  startSupervisor,
  supervisorChild,
} from './supervisor.js';
export type { SupervisorRequest } from './supervisor-actor.js';

// the jobs application
export { startJobs, JobsApp, SYSTEM_NAMES, type AppScheduler, type JobsAppSystem } from './jobs/jobs-app.js';
export type { StartJobsOptions, JobsAppSettings, JobsStoreOptions, RootExitAction } from './jobs/app-options.js';
export type { AppStop } from './jobs/app-stop.js';
export { Subscription, type JobStateChange } from './jobs/subscription.js';
export { type JobEvent, type SubscriptionState, isJobEvent } from './jobs/job-event.js';
export { subscribeJob, unsubscribeJob, type ActorSubscription } from './jobs/actor-subscription.js';
export { jobsCore, type JobsCore } from './jobs/bridge-client.js';
export type { JobsBridge, BridgeAcceptOptions, JobSnapshot, NotifierSnapshot } from './jobs/jobs-bridge.js';
export { formatTree, type TreeNode } from './jobs/live-tree.js';

// processors: handlers run by the scheduler (couch_replicator_scheduler's re-creation)
export {
  DEFAULT_GRACE_MS,
  DEFAULT_ONE_SHOT_ATTEMPTS,
  DEFAULT_SCHEDULER_OPTIONS,
  HandlerAbortError,
  Scheduler,
  SchedulerError,
  backoffMs,
  defineHandler,
  startScheduler,
} from './processors/index.js';
export type {
  AbortCause,
  Attempts,
  FailedOutcome,
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
