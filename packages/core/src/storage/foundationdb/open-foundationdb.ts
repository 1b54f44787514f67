// Opens the FoundationDB backend: loads the optional `foundationdb` binding,
// connects with the given cluster file and opens (or creates) the directory
// all of jobtree's keys live under. `openDatabase({ clusterFile })` imports
// this module lazily, so the embedded engine never loads the binding.

import { access, constants } from 'node:fs/promises';
import { BackendUnavailableError, FdbError, FdbErrorCode } from '../../errors.js';
import type { Database, FoundationDbOptions } from '../interfaces.js';
import { type Binding, type BindingDatabase, loadBinding } from './binding.js';
import { FoundationDbDatabase } from './fdb-database.js';
import { toFdbError } from './fdb-transaction.js';
import { Keyspace } from './keyspace.js';

export interface FoundationDbAdapterOptions extends FoundationDbOptions {
  /**
   * FoundationDB API version to select. 710 works with 7.1, 7.2 and 7.3
   * clients; node-foundationdb 2.x supports up to 720. The API version is
   * process-wide: every open in one process must use the same one.
   * @default 710
   */
  apiVersion?: number;
  /**
   * How long to wait for the cluster to answer the first transaction (opening
   * the directory) before giving up: FoundationDB itself waits forever for an
   * unreachable cluster.
   * @default 10000
   */
  connectTimeoutMs?: number;
}

const DEFAULT_API_VERSION = 710;
const DEFAULT_DIRECTORY = ['jobtree'];
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

function checkOptions(options: FoundationDbAdapterOptions): void {
  if (typeof options?.clusterFile !== 'string' || options.clusterFile === '') {
    throw new FdbError(FdbErrorCode.invalid_option_value, 'clusterFile must be the path of a FoundationDB cluster file');
  }
  const { directory } = options;
  if (
    directory !== undefined &&
    (!Array.isArray(directory) || directory.length === 0 || directory.some((part) => typeof part !== 'string' || part === ''))
  ) {
    throw new FdbError(FdbErrorCode.invalid_option_value, 'directory must be a non-empty array of non-empty strings');
  }
}

/** The first answer from a cluster, or BackendUnavailableError once `connectTimeoutMs` passed without one. */
async function withConnectTimeout<T>(request: Promise<T>, options: FoundationDbAdapterOptions): Promise<T> {
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BackendUnavailableError(
            `the FoundationDB cluster of ${options.clusterFile} did not answer within ${timeoutMs} ms; is it running and is the cluster file current?`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([request, timeout]);
  } catch (error) {
    throw toFdbError(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Opens a FoundationDB cluster as a jobtree `Database`. Keys live under the
 * directory `options.directory` (default `['jobtree']`); callers never see
 * the directory prefix.
 *
 * @throws BackendUnavailableError when the binding or FoundationDB's client
 *   library cannot load, the cluster file is missing, or the cluster does not
 *   answer within `connectTimeoutMs`.
 * @example
 * const db = await openFoundationDb({ clusterFile: '/etc/foundationdb/fdb.cluster' });
 */
export async function openFoundationDb(options: FoundationDbAdapterOptions): Promise<Database> {
  const { binding, db } = await connect(options);
  try {
    const directory = await withConnectTimeout(
      binding.directory.createOrOpen(db, options.directory ?? DEFAULT_DIRECTORY),
      options,
    );
    return new FoundationDbDatabase(db, new Keyspace(directory.getSubspace().prefix));
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Removes a directory and every key in it (tests use one directory per
 * case). Resolves `false` when there was no such directory.
 */
export async function removeFoundationDbDirectory(options: FoundationDbAdapterOptions): Promise<boolean> {
  const { binding, db } = await connect(options);
  try {
    return await withConnectTimeout(binding.directory.removeIfExists(db, options.directory ?? DEFAULT_DIRECTORY), options);
  } finally {
    db.close();
  }
}

async function connect(options: FoundationDbAdapterOptions): Promise<{ binding: Binding; db: BindingDatabase }> {
  checkOptions(options);
  const { clusterFile } = options;
  const binding = await loadBinding();
  try {
    await access(clusterFile, constants.R_OK);
  } catch (error) {
    throw new BackendUnavailableError(`the FoundationDB cluster file ${clusterFile} cannot be read`, { cause: error });
  }
  const apiVersion = options.apiVersion ?? DEFAULT_API_VERSION;
  try {
    binding.setAPIVersion(apiVersion);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new BackendUnavailableError(
      `FoundationDB API version ${apiVersion} cannot be selected (${reason}); the installed client library or an earlier open in this process decides which versions work`,
      { cause: error },
    );
  }
  try {
    return { binding, db: binding.open(clusterFile) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new BackendUnavailableError(`opening the FoundationDB cluster of ${clusterFile} failed (${reason})`, {
      cause: error,
    });
  }
}
