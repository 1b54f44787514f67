// Whether the endpoint an admin.json names may receive the app's token.
// The token goes wherever the record points: whoever can write the record,
// or replace it in its directory, could point it at a server of their own
// and collect the token. So the record must be the current user's and
// writable by nobody else, in a directory nobody else can rewrite (owned by
// this user or root, and writable by nobody else unless sticky, where
// others cannot replace a file they do not own).

import { lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_RECORD_FILE } from '../admin/admin-record.js';

/** Group and other write bits. */
const WRITABLE_BY_OTHERS = 0o022;
const STICKY = 0o1000;

/** Why the record in `dir` cannot be trusted with the token, or undefined when it can (or the system has no file owners). */
export function recordTrustProblem(dir: string): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const recordPath = join(dir, ADMIN_RECORD_FILE);
  let directory: ReturnType<typeof statSync>;
  let record: ReturnType<typeof lstatSync>;
  try {
    directory = statSync(dir);
    record = lstatSync(recordPath);
  } catch (error) {
    return `${recordPath} cannot be checked (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  if (directory.uid !== uid && directory.uid !== 0) return `the directory ${dir} is owned by user ${directory.uid}, not by this user (${uid})`;
  if ((directory.mode & WRITABLE_BY_OTHERS) !== 0 && (directory.mode & STICKY) === 0) return `the directory ${dir} is writable by other users (mode ${octal(directory.mode)})`;
  if (!record.isFile()) return `${recordPath} is not a regular file`;
  if (record.uid !== uid) return `${recordPath} is owned by user ${record.uid}, not by this user (${uid})`;
  if ((record.mode & WRITABLE_BY_OTHERS) !== 0) return `${recordPath} is writable by other users (mode ${octal(record.mode)})`;
  return undefined;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}
