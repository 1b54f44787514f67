// The public surface of @jobtree/core, picked by hand.

// errors
export { FdbError, FdbErrorCode, RETRYABLE_CODES, DatabaseLockedError, BackendUnavailableError } from './errors.js';
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
} from './storage/interfaces.js';

// jobs
