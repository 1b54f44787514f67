// The backends the storage conformance suite runs against. A backend that
// cannot run here says why in `skipReason`; its cases are then registered
// as skipped and the reason is printed once.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Database, type StoreDurability, openDatabase } from '@jobtree/core';
import type { FoundationDbDatabase } from '../../packages/core/src/storage/foundationdb/fdb-database.js';

/** FoundationDB's documented key size limit, in bytes (written out, not imported, so that the suite pins it). */
export const FOUNDATIONDB_KEY_LIMIT = 10_000;

export interface StorageBackend {
  name: string;
  /** Set when the backend cannot run in this environment. */
  skipReason?: string;
  /** A fresh, empty database. */
  open(): Promise<Database>;
  /**
   * The longest key a caller may use on `db`: FoundationDB's limit minus
   * whatever the backend puts in front of the caller's keys.
   */
  maxKeyBytes(db: Database): number;
  /** Closes `db` (if still open) and removes what `open()` created. */
  destroy(db: Database): Promise<void>;
}

const embeddedDirs = new WeakMap<Database, string>();

/** The embedded engine with commits acknowledged when flushed (`'flush'`) or once written (`'deferred'`). */
function embeddedWith(durability: StoreDurability): StorageBackend {
  return {
    name: durability === 'flush' ? 'embedded' : 'embedded, deferred durability',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'jobtree-storage-'));
      const db = await openDatabase(durability === 'flush' ? { path: dir } : { path: dir, durability });
      embeddedDirs.set(db, dir);
      return db;
    },
    // Keys are stored as given: the whole limit is the caller's.
    maxKeyBytes: () => FOUNDATIONDB_KEY_LIMIT,
    async destroy(db) {
      await db.close();
      const dir = embeddedDirs.get(db);
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const embeddedBackend: StorageBackend = embeddedWith('flush');
export const embeddedDeferredBackend: StorageBackend = embeddedWith('deferred');

// FoundationDB: runs only against a real cluster named by FDB_CLUSTER_FILE.
// Each database is a directory of its own (cases run concurrently), removed
// with everything in it by destroy().
const fdbClusterFile = process.env.FDB_CLUSTER_FILE;
const fdbDirectories = new WeakMap<Database, string[]>();
let fdbDirectoryCount = 0;

export const foundationDbBackend: StorageBackend = {
  name: 'foundationdb',
  ...(fdbClusterFile
    ? {}
    : { skipReason: 'FDB_CLUSTER_FILE is not set (point it at a FoundationDB cluster file to run these cases)' }),
  async open() {
    if (!fdbClusterFile) throw new Error('FDB_CLUSTER_FILE is not set');
    const directory = ['jobtree-conformance', `${process.pid}-${Date.now()}-${fdbDirectoryCount++}`];
    const { openFoundationDb } = await import('../../packages/core/src/storage/foundationdb/open-foundationdb.js');
    const db = await openFoundationDb({ clusterFile: fdbClusterFile, directory });
    fdbDirectories.set(db, directory);
    return db;
  },
  // Every key lives under the directory prefix, which counts against the cluster's limit.
  maxKeyBytes: (db) => FOUNDATIONDB_KEY_LIMIT - (db as FoundationDbDatabase).prefix.length,
  async destroy(db) {
    await db.close();
    const directory = fdbDirectories.get(db);
    if (directory === undefined || !fdbClusterFile) return;
    const { removeFoundationDbDirectory } = await import('../../packages/core/src/storage/foundationdb/open-foundationdb.js');
    await removeFoundationDbDirectory({ clusterFile: fdbClusterFile, directory });
  },
};

/** Every backend the conformance suite runs against; other backends register here. */
export const backends: StorageBackend[] = [embeddedBackend, embeddedDeferredBackend, foundationDbBackend];
