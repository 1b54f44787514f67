// What a running app leaves in its data directory for the `jobtree` command:
// where its admin endpoint listens (admin.json) and the token its mutations
// need (admin.token, readable by its user only), so that a command finds
// the app here and talks to it. Of several processes sharing one store, the
// last one started with `admin` on this directory is the one recorded.

import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The contents of admin.json. */
export interface AdminRecord {
  /** Base URL of the endpoint, e.g. `http://127.0.0.1:7070`. */
  url: string;
  host: string;
  port: number;
  /** The app's process id. */
  pid: number;
  /** Epoch ms. */
  startedAt: number;
}

export const ADMIN_RECORD_FILE = 'admin.json';
export const ADMIN_TOKEN_FILE = 'admin.token';

/** Writes the token first (mode 0600 from its creation) and then the address, each to a new file renamed into place. */
export function writeAdminRecord(dir: string, record: AdminRecord, token: string): void {
  createPrivately(dir);
  const tokenPath = join(dir, ADMIN_TOKEN_FILE);
  const tokenTemp = `${tokenPath}.${process.pid}.tmp`;
  // Created afresh, never opened through what is there: in a directory others
  // can write to, a link planted at this name would receive the token.
  rmSync(tokenTemp, { force: true });
  writeFileSync(tokenTemp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tokenTemp, tokenPath);
  const recordPath = join(dir, ADMIN_RECORD_FILE);
  const recordTemp = `${recordPath}.${process.pid}.tmp`;
  rmSync(recordTemp, { force: true });
  // Writable by its owner only, whatever the umask: the command sends the token only where such a record points.
  writeFileSync(recordTemp, `${JSON.stringify(record, null, 2)}\n`, { flag: 'wx', mode: 0o644 });
  renameSync(recordTemp, recordPath);
}

/**
 * Creates a missing directory its owner's alone whatever the umask, as the
 * store does its own: the command trusts the record only in a directory
 * nobody else can write to. Missing parents are made as `mkdir -p` would;
 * an existing directory keeps its mode.
 */
function createPrivately(dir: string): void {
  mkdirSync(dirname(resolve(dir)), { recursive: true });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Removes the files, unless another process has written its own since. */
export function removeAdminRecord(dir: string, pid: number = process.pid): void {
  const record = readAdminRecord(dir);
  if (record !== undefined && record.pid !== pid) return;
  rmSync(join(dir, ADMIN_RECORD_FILE), { force: true });
  rmSync(join(dir, ADMIN_TOKEN_FILE), { force: true });
}

/** The recorded address, or undefined when there is none (or it is unreadable). */
export function readAdminRecord(dir: string): AdminRecord | undefined {
  const path = join(dir, ADMIN_RECORD_FILE);
  if (!existsSync(path)) return undefined;
  try {
    return parseAdminRecord(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** admin.json's text as a record, or undefined when it is not one. */
export function parseAdminRecord(text: string): AdminRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<AdminRecord>;
    if (typeof value.url !== 'string' || typeof value.pid !== 'number') return undefined;
    return value as AdminRecord;
  } catch {
    return undefined;
  }
}

/** The recorded token, or undefined when there is none or it cannot be read (another user's app). */
export function readAdminToken(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, ADMIN_TOKEN_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this id is alive (signal 0 probes without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
