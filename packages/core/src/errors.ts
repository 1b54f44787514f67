// Every error @jobtree/core throws is one of these classes, each with a
// stable `code`: storage errors carry FoundationDB's numeric code (so code
// written against FoundationDB's error numbers keeps working on the embedded
// engine), jobs errors a string code from couch_jobs.

/** FoundationDB's error codes that this project raises, by name. */
export const FdbErrorCode = {
  operation_failed: 1000,
  transaction_too_old: 1007,
  future_version: 1009,
  not_committed: 1020,
  commit_unknown_result: 1021,
  transaction_cancelled: 1025,
  accessed_unreadable: 1036,
  operation_cancelled: 1101,
  client_invalid_operation: 2000,
  used_during_commit: 2017,
  inverted_range: 2005,
  key_outside_legal_range: 2004,
  invalid_option_value: 2006,
  transaction_too_large: 2101,
  key_too_large: 2102,
  value_too_large: 2103,
  internal_error: 4100,
} as const;

export type FdbErrorName = keyof typeof FdbErrorCode;

const namesByCode = new Map<number, FdbErrorName>(
  Object.entries(FdbErrorCode).map(([name, code]) => [code, name as FdbErrorName]),
);

/** The codes `doTransaction` retries: the body is run again from the start. */
export const RETRYABLE_CODES: ReadonlySet<number> = new Set([
  FdbErrorCode.transaction_too_old,
  FdbErrorCode.future_version,
  FdbErrorCode.not_committed,
  FdbErrorCode.commit_unknown_result,
]);

/** A storage error, embedded or FoundationDB, with FoundationDB's numeric `code`. */
export class FdbError extends Error {
  override readonly name = 'FdbError';
  readonly code: number;
  /** FoundationDB's name for the code, e.g. `not_committed`. */
  readonly label: string;

  constructor(code: number, message?: string, options?: { cause?: unknown }) {
    const label = namesByCode.get(code) ?? `fdb_error_${code}`;
    super(message ? `${label} (${code}): ${message}` : `${label} (${code})`, options);
    this.code = code;
    this.label = label;
  }

  static is(error: unknown, name?: FdbErrorName): error is FdbError {
    return error instanceof FdbError && (name === undefined || error.code === FdbErrorCode[name]);
  }

  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }
}

/**
 * The data directory is owned by another live process (or by another open in
 * this one). `ownerPid` is 0 when the owner had not yet written its pid.
 */
export class DatabaseLockedError extends Error {
  override readonly name = 'DatabaseLockedError';
  readonly code = 'database_locked';
  /** @param detail what else is known about the owner; by default, how to share the store instead */
  constructor(
    readonly path: string,
    readonly ownerPid: number,
    detail?: string,
  ) {
    const owner = ownerPid > 0 ? `process ${ownerPid}` : 'another process (it has not written its pid yet)';
    super(
      `the data directory ${path} is in use by ${owner} ${
        detail ??
        '(a Database opened with openDatabase belongs to one process; open the store with openJobs or startJobs, and processes share it through the one that owns it)'
      }`,
    );
  }
}

/**
 * The embedded engine's data directory cannot be created or opened: a file
 * is in the way, permission is denied, or lmdb refused the files in it.
 * `cause` holds the underlying error.
 */
export class DataDirectoryError extends Error {
  override readonly name = 'DataDirectoryError';
  readonly code = 'data_directory_unusable';
  constructor(
    readonly path: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the data directory ${path} cannot be used: ${reason}`, options);
  }
}

/** The FoundationDB backend was asked for but cannot be loaded. */
export class BackendUnavailableError extends Error {
  override readonly name = 'BackendUnavailableError';
  readonly code = 'backend_unavailable';
}

/** The stable codes a {@link JobsError} carries (couch_jobs' error atoms). */
export type JobsErrorCode =
  | 'no_type_timeout'
  | 'halt'
  | 'invalid_job_data'
  | 'invalid_job_type'
  | 'invalid_job_id'
  | 'invalid_priority'
  | 'invalid_scheduled_time'
  | 'invalid_timeout'
  | 'invalid_versionstamp'
  | 'invalid_option'
  /** `setTypeLimits` got limits that are not a positive whole concurrency nor a `{ max, perMs }` rate. */
  | 'invalid_limits'
  /** A job's `group` option that is not a non-empty string of at most 256 UTF-8 bytes. */
  | 'invalid_group'
  | 'not_found'
  /** `retry` of a job that did not end failed or cancelled (it is pending, running, or succeeded). */
  | 'not_retryable'
  /** A schedule's spec (a cron expression, a time zone, an interval) or backfill policy is not one. */
  | 'invalid_schedule'
  /** `addFlow` got a tree that is not one: a job twice, a node that is its own ancestor, a bad policy, too many jobs. */
  | 'invalid_flow'
  /** `addFlow` names a job that exists already: a flow only adds new jobs. */
  | 'flow_job_exists'
  /** `subscribeFlow` of a job that exists but is in no flow (subscribe to it alone instead). */
  | 'not_in_flow'
  | 'closed'
  /**
   * jobtree (the jobs app): the app stopped because its root supervisor
   * ended on its own (killed, or out of restart intensity); see `app.stopped`.
   */
  | 'app_stopped'
  /** A stored job record or queue key does not decode, or a record to write lacks what its state needs. */
  | 'corrupt_record'
  /** jobtree (the jobs app): `unsubscribe`/`wait` got something that is not a subscription. */
  | 'invalid_subscription'
  /**
   * jobtree (the jobs app): a job type's notifier died and no successor came
   * in time; also a call a store's owner does not serve (an owner opened
   * with openJobs serves no subscriptions).
   */
  | 'unavailable'
  /**
   * A process sharing an embedded store lost the store's owner (it closed,
   * exited or was killed) while this call was in flight: the call may or may
   * not have taken effect. Retryable once a new owner serves the store.
   */
  | 'owner_lost'
  /** The call needs the store's transactions in this process (`in(tx)`, `database`), and another process owns the store. */
  | 'not_owner'
  /** The store's owner runs another version of the protocol between the processes of one store. */
  | 'protocol_mismatch'
  /** The store's socket is not private to this process's user. */
  | 'access_denied';

/**
 * A jobs API error. `halt` tells a job processor that the job is no longer
 * its own (removed, re-enqueued or taken by another worker): it must stop.
 */
export class JobsError extends Error {
  override readonly name = 'JobsError';
  readonly code: JobsErrorCode;

  constructor(code: JobsErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.code = code;
  }

  static is(error: unknown, code?: JobsErrorCode): error is JobsError {
    return error instanceof JobsError && (code === undefined || error.code === code);
  }
}
