// The backends the storage conformance suite runs against. A backend that
// cannot run here says why in `skipReason`; its cases are then registered
// as skipped and the reason is printed once.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Database, openDatabase } from '@jobtree/core';

export interface StorageBackend {
  name: string;
  /** Set when the backend cannot run in this environment. */
  skipReason?: string;
  /** A fresh, empty database. */
  open(): Promise<Database>;
  /** Closes `db` (if still open) and removes what `open()` created. */
  destroy(db: Database): Promise<void>;
}

const embeddedDirs = new WeakMap<Database, string>();

export const embeddedBackend: StorageBackend = {
  name: 'embedded',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'jobtree-storage-'));
    const db = await openDatabase({ path: dir });
    embeddedDirs.set(db, dir);
    return db;
  },
  async destroy(db) {
    await db.close();
    const dir = embeddedDirs.get(db);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  },
};

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
  async destroy(db) {
    await db.close();
    const directory = fdbDirectories.get(db);
    if (directory === undefined || !fdbClusterFile) return;
    const { removeFoundationDbDirectory } = await import('../../packages/core/src/storage/foundationdb/open-foundationdb.js');
    await removeFoundationDbDirectory({ clusterFile: fdbClusterFile, directory });
  },
};

/** Every backend the conformance suite runs against; other backends register here. */
export const backends: StorageBackend[] = [embeddedBackend, foundationDbBackend];
