// The public surface of @jobtree/core, picked by hand.

// errors
export {
  FdbError,
  FdbErrorCode,
  RETRYABLE_CODES,
  DatabaseLockedError,
  DataDirectoryError,
  BackendUnavailableError,
} from './errors.js';
export type { FdbErrorName } from './errors.js';

// storage
export type {
  Bytes,
  KeyValue,
  RangeOptions,
  Watch,
  ReadTransaction,
  Transaction,
  TransactionOptions,
  BackendKind,
  Database,
  DatabaseOptions,
  EmbeddedOptions,
  FoundationDbOptions,
  StoreDurability,
} from './storage/interfaces.js';
export { openDatabase, DEFAULT_DATA_PATH } from './storage/open-database.js';
export {
  MAX_KEY_BYTES,
  MAX_VALUE_BYTES,
  MAX_TRANSACTION_BYTES,
  TRANSACTION_LIFE_MS,
  VERSIONSTAMP_BYTES,
} from './storage/limits.js';

// jobs
export { JobsError } from './errors.js';
export type { JobsErrorCode } from './errors.js';
export { Jobs, JobsHandle } from './jobs/jobs.js';
export type { StoreRole } from './jobs/jobs.js';
export { openJobs } from './jobs/open-jobs.js';
export { SharedJobs } from './sharing/shared-jobs.js';
export { StoreSharing } from './sharing/store-sharing.js';
export type { RoleChange, StoreRoleOption, StoreSharingOptions } from './sharing/store-sharing.js';
export type { ServedCall, ServedConnection, ServedMethod } from './sharing/store-server.js';
export { servedJobsCalls } from './sharing/served-jobs-calls.js';
export type { OwnerConnection } from './sharing/owner-connection.js';
export type { JobsInTransaction } from './jobs/jobs-in-transaction.js';
export type { PausedType } from './jobs/type-pauses.js';
export { tickJobId, checkScheduleSpecShape, MAX_TICKS_PER_CALL, MIN_EVERY_MS } from './jobs/schedules.js';
export type { ScheduleBackfill, ScheduleInput, ScheduleRecord, ScheduleSpec } from './jobs/schedules.js';
export { MAX_ACCEPT_MANY } from './jobs/accept-batcher.js';
export { LocalQueue, DEFAULT_LOCAL_QUEUE_SIZE } from './jobs/local-queue.js';
export type {
  LocalQueueConsumer,
  LocalQueueMode,
  LocalQueueOptions,
  LocalQueueSlotOptions,
  LocalQueueSlots,
  LocalQueueSource,
} from './jobs/local-queue.js';
export type {
  Job,
  JobTypes,
  JobDataOf,
  JobInputOf,
  JobInfo,
  JobSpec,
  JobStateEntry,
  WorkerItem,
  CompleteItem,
  FailItem,
  FailAttemptOptions,
  JobsFilter,
  JobError,
  JobErrorInput,
  Settled,
  JobState,
  JobOutcome,
  JsonValue,
  AddOptions,
  BackoffSchedule,
  JobRetryPolicy,
  TraceContext,
  ResubmitOptions,
  WorkerResubmitOptions,
  AcceptOptions,
  PendingCountOptions,
  ReEnqueueOptions,
  OpenJobsOptions,
  SharingOptions,
} from './jobs/interfaces.js';
export { MAX_JOB_DATA_BYTES } from './jobs/job-data.js';
export type { TypeLimits } from './jobs/type-limits.js';
export type { JobsClock } from './jobs/jobs-clock.js';
export { MAX_FLOW_JOBS } from './jobs/job-flows.js';
export type { ChildFailurePolicy, FlowAdded, FlowChild, FlowJobRef, FlowNode, FlowSpec } from './jobs/job-flows.js';
export { MAX_TYPE_BYTES, MAX_ID_BYTES, MAX_SCHEDULED_TIME } from './jobs/job-input.js';
export { MAX_PRUNE_BATCH } from './jobs/prune-finished.js';
export type { PruneLimits, PruneOptions, PruneResult } from './jobs/prune-finished.js';
export { checkJobsConsistency } from './jobs/consistency.js';
export type { ConsistencyAnomaly, ConsistencyAnomalyKind, ConsistencyReport, RunningJobEntry } from './jobs/consistency.js';

// options: the known names of an options object, shared by jobtree's packages
export { OptionNames } from './option-names.js';
export { checkSharingOptions } from './jobs/job-input.js';

// keys
export { Subspace, keyAfterPrefix } from './keys/subspace.js';
export type { KeyRange, TupleItem } from './keys/subspace.js';
export { ZERO_VERSIONSTAMP, isVersionstamp, versionstampElement, completeVersionstampElement } from './keys/versionstamp.js';
export type { Versionstamp, VersionstampTemplate } from './keys/versionstamp.js';
