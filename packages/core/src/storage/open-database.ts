// The one entry point to storage: the embedded engine by default, the
// FoundationDB adapter when a cluster file is given (loaded only then, since
// its native client is an optional dependency that may be missing).

import { BackendUnavailableError, FdbError, FdbErrorCode } from '../errors.js';
import { OptionNames } from '../option-names.js';
import { EmbeddedDatabase } from './embedded/embedded-database.js';
import type { Database, DatabaseOptions, FoundationDbOptions } from './interfaces.js';
import { describe } from './limits.js';

/** Where the embedded engine keeps its data when no path is given. */
export const DEFAULT_DATA_PATH = './.data/jobtree';

const DATABASE_OPTIONS = new OptionNames('openDatabase', ['path', 'clusterFile', 'directory', 'durability'], {
  dir: 'path',
  directoryPath: 'path',
});
/** With a cluster file, the FoundationDB adapter's own options pass through. */
const CLUSTER_OPTIONS = new OptionNames('openDatabase', ['clusterFile', 'directory', 'apiVersion', 'connectTimeoutMs'], { dir: 'directory' });

interface FoundationDbModule {
  openFoundationDb(options: FoundationDbOptions): Promise<Database>;
}

/**
 * Opens a database.
 * @example
 * const db = await openDatabase({ path: './.data/app' });
 * await db.doTransaction((tx) => tx.set(Buffer.from('k'), Buffer.from('v')));
 */
export async function openDatabase(options: DatabaseOptions = {}): Promise<Database> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new FdbError(FdbErrorCode.invalid_option_value, `openDatabase options must be an object, got ${describe(options)}`);
  }
  const cluster = 'clusterFile' in options && options.clusterFile !== undefined;
  if (cluster && 'durability' in options && options.durability !== undefined) {
    // FoundationDB acknowledges a commit once it is durable on its storage servers' logs: there is nothing to relax.
    throw new FdbError(
      FdbErrorCode.invalid_option_value,
      'durability is an option of the embedded store: FoundationDB always acknowledges a commit once it is durable',
    );
  }
  const unknown = (cluster ? CLUSTER_OPTIONS : DATABASE_OPTIONS).unknownIn(options);
  if (unknown !== undefined) throw new FdbError(FdbErrorCode.invalid_option_value, unknown);
  if (cluster) {
    let adapter: FoundationDbModule;
    try {
      adapter = (await import('./foundationdb/open-foundationdb.js')) as FoundationDbModule;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new BackendUnavailableError(`the FoundationDB backend cannot be loaded: ${reason}`, { cause: error });
    }
    return adapter.openFoundationDb(options);
  }
  const path: unknown = 'path' in options && options.path !== undefined ? options.path : DEFAULT_DATA_PATH;
  if (typeof path !== 'string' || path === '' || path.includes('\0')) {
    throw new FdbError(
      FdbErrorCode.invalid_option_value,
      `path must be a non-empty string without NUL characters, got ${describe(path)}`,
    );
  }
  const durability: unknown = 'durability' in options ? options.durability : undefined;
  if (durability !== undefined && durability !== 'flush' && durability !== 'deferred') {
    throw new FdbError(FdbErrorCode.invalid_option_value, `durability is 'flush' or 'deferred', got ${describe(durability)}`);
  }
  return EmbeddedDatabase.open(durability === undefined ? { path } : { path, durability });
}
