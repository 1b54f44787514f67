// Whether the endpoint an admin.json names may receive the app's token.
// The token goes wherever the record points: whoever can write the record,
// or replace it in its directory, could point it at a server of their own
// and collect the token. So the record must be the current user's and
// writable by nobody else, in a directory nobody else can rewrite (owned by
// this user or root, and writable by nobody else unless sticky, where
// others cannot replace a file they do not own).

import { type Stats, closeSync, constants, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_RECORD_FILE, type AdminRecord, parseAdminRecord } from '../admin/admin-record.js';

/** Group and other write bits. */
const WRITABLE_BY_OTHERS = 0o022;
const STICKY = 0o1000;

export interface CheckedRecord {
  /** The record in the directory, undefined when there is none (or it is no record). */
  record: AdminRecord | undefined;
  /** Why `record` cannot be trusted with the token; undefined when it can (or the system has no file owners). */
  trustProblem: string | undefined;
}

/**
 * Reads the record in `dir` and checks it. Its owner and mode are those of
 * the file its text was read from (one open file, never the path twice):
 * whoever can rename the directories on the way to `dir` could otherwise
 * show the check one record and the reader another. The directory is still
 * checked by its path, so such a swap can show it another directory than
 * the record's; the record then read is still one only this user could write.
 */
export function readCheckedRecord(dir: string): CheckedRecord {
  const recordPath = join(dir, ADMIN_RECORD_FILE);
  // Non-blocking: a named pipe planted as the record would hold the open until something writes to it.
  const flags = constants.O_RDONLY | constants.O_NONBLOCK;
  let fd: number;
  let link = false;
  try {
    try {
      fd = openSync(recordPath, flags | constants.O_NOFOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOOP') throw error;
      // A link: read where it leads, as reads go anywhere, but never trusted with the token.
      link = true;
      fd = openSync(recordPath, flags);
    }
  } catch {
    // Missing, or not this user's to read: no record.
    return { record: undefined, trustProblem: undefined };
  }
  try {
    const file = fstatSync(fd);
    const record = file.isFile() ? parseAdminRecord(readFileSync(fd, 'utf8')) : undefined;
    return { record, trustProblem: trustProblem(dir, recordPath, link ? undefined : file) };
  } finally {
    closeSync(fd);
  }
}

/** `record`: the file read, undefined when the record is a link. */
function trustProblem(dir: string, recordPath: string, record: Stats | undefined): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  let directory: Stats;
  try {
    directory = statSync(dir);
  } catch (error) {
    return `${dir} cannot be checked (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  if (directory.uid !== uid && directory.uid !== 0) return `the directory ${dir} is owned by user ${directory.uid}, not by this user (${uid})`;
  if ((directory.mode & WRITABLE_BY_OTHERS) !== 0 && (directory.mode & STICKY) === 0) return `the directory ${dir} is writable by other users (mode ${octal(directory.mode)})`;
  if (record === undefined || !record.isFile()) return `${recordPath} is not a regular file`;
  if (record.uid !== uid) return `${recordPath} is owned by user ${record.uid}, not by this user (${uid})`;
  if ((record.mode & WRITABLE_BY_OTHERS) !== 0) return `${recordPath} is writable by other users (mode ${octal(record.mode)})`;
  return undefined;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}
