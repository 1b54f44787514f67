// The parts of the `foundationdb` npm binding (node-foundationdb 2.x) the
// adapter uses, declared here so the adapter typechecks and its pure parts run
// without the package's native half, which needs FoundationDB's client library
// (libfdb_c) installed on the machine. The binding is loaded only when a
// cluster file is given.

import { BackendUnavailableError } from '../../errors.js';

/** A watch as the binding returns it: resolves `true` once the value changed. */
export interface BindingWatch {
  promise: Promise<boolean>;
  cancel(): void;
}

export interface BindingRangeOptions {
  /** 0 means no limit, as in FoundationDB's C API. */
  limit?: number;
  reverse?: boolean;
}

/** A transaction of the binding at the root subspace: keys and values are raw Buffers. */
export interface BindingTransaction {
  get(key: Buffer): Promise<Buffer | undefined>;
  getRangeAll(start: Buffer, end: Buffer, options?: BindingRangeOptions): Promise<[Buffer, Buffer][]>;
  set(key: Buffer, value: Buffer): void;
  clear(key: Buffer): void;
  clearRange(start: Buffer, end: Buffer): void;
  addReadConflictRange(start: Buffer, end: Buffer): void;
  addReadConflictKey(key: Buffer): void;
  addWriteConflictKey(key: Buffer): void;
  atomicOpNative(mutation: number, key: Buffer, operand: Buffer): void;
  /** With `throwAllErrors`, the promise rejects on every error (cancel gives operation_cancelled, 1101). */
  watch(key: Buffer, options?: { throwAllErrors?: boolean }): BindingWatch;
  snapshot(): BindingTransaction;
  getVersionstamp(): { promise: Promise<Buffer> };
  rawCommit(): Promise<void>;
  /** FoundationDB's on_error: waits the backoff and resets for a retry, or rethrows a non-retryable error. */
  rawOnError(code: number): Promise<void>;
  rawCancel(): void;
}

export interface BindingDatabase {
  rawCreateTransaction(): BindingTransaction;
  close(): void;
}

export interface BindingDirectory {
  getSubspace(): { prefix: Buffer };
}

export interface Binding {
  setAPIVersion(version: number): void;
  open(clusterFile?: string): BindingDatabase;
  directory: {
    createOrOpen(db: BindingDatabase, path: string[]): Promise<BindingDirectory>;
    /** Removes the directory and everything in it; resolves false when it did not exist. */
    removeIfExists(db: BindingDatabase, path: string[]): Promise<boolean>;
  };
}

/**
 * FoundationDB's mutation type codes (fdb.options), stable across API
 * versions; declared here so no enum from the binding is needed at load time.
 */
export const MutationType = {
  add: 2,
  setVersionstampedKey: 14,
  setVersionstampedValue: 15,
} as const;

/** The binding's error class is not imported: any error with a numeric `code` from it is a FoundationDB error. */
export function bindingErrorCode(error: unknown): number | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'number') return error.code;
  return undefined;
}

function isBinding(candidate: unknown): candidate is Binding {
  if (typeof candidate !== 'object' || candidate === null) return false;
  const shape = candidate as Partial<Record<keyof Binding, unknown>>;
  return typeof shape.setAPIVersion === 'function' && typeof shape.open === 'function' && typeof shape.directory === 'object';
}

/**
 * Loads the binding. Every way this can fail (package not installed, native
 * client library missing, incompatible build) becomes one
 * `BackendUnavailableError` naming the cause and the fix.
 *
 * @param specifier the module to import; only tests pass anything else.
 */
export async function loadBinding(specifier = 'foundationdb'): Promise<Binding> {
  let loaded: unknown;
  try {
    // A variable specifier keeps TypeScript and bundlers from resolving the
    // optional package eagerly: the embedded engine must work without it.
    loaded = await import(specifier);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const code = error instanceof Error && 'code' in error ? String(error.code) : '';
    const fix =
      code === 'ERR_MODULE_NOT_FOUND' && reason.includes(`'${specifier}'`)
        ? `install it with \`pnpm add ${specifier}\` (an optional dependency of @jobtree/core)`
        : "install FoundationDB's client library (libfdb_c, https://apple.github.io/foundationdb/downloads.html) " +
          'or open the embedded engine instead: openDatabase({ path })';
    throw new BackendUnavailableError(
      `the FoundationDB backend is unavailable: loading the '${specifier}' package failed (${reason}); ${fix}`,
      { cause: error },
    );
  }
  // The binding is CommonJS: its exports arrive as `default`.
  const namespace = loaded as { default?: unknown };
  const binding = isBinding(namespace.default) ? namespace.default : loaded;
  if (!isBinding(binding)) {
    throw new BackendUnavailableError(
      `the FoundationDB backend is unavailable: the '${specifier}' package does not look like node-foundationdb 2.x (no setAPIVersion/open/directory)`,
    );
  }
  return binding;
}
