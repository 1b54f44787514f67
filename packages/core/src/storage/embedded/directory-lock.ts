// One owner per data directory. lmdb itself lets several processes share an
// environment, but the engine keeps its conflict log and read versions in
// memory, so a second owner would silently break isolation.
//
// Ownership is a lock the kernel arbitrates: an exclusive lock on the open
// lock file (an open-file-description lock on Linux, via
// fs-native-extensions), held for as long as the file stays open. The
// kernel gives it to exactly one opener, however they race, and drops it the
// moment the owner's process exits, even before its parent reaps it (a
// zombie holds no files). There is no "stale lock" to judge and take over:
// a lock file whose owner died is simply not locked. The pid written into
// the file only names the owner in `DatabaseLockedError`.
//
// The owner unlinks the file on release, while still holding the lock. An
// opener that locked a file in that instant holds the lock of a file that is
// no longer at the path, so after locking it checks that the path still names
// the file it locked, and starts over if not.

import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, realpathSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { tryLock } from 'fs-native-extensions';
import { DataDirectoryError, DatabaseLockedError } from '../../errors.js';

const LOCK_FILE = 'jobtree.lock';
/** Attempts when the lock file keeps being replaced under us by owners releasing it. */
const MAX_ATTEMPTS = 100;

/** Directories this process holds, so a second open in the same process fails without touching the file. */
const heldHere = new Set<string>();

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** The pid in an open lock file, or 0 when it holds none (yet). */
function readOwner(fd: number): number {
  const bytes = Buffer.alloc(32);
  const length = readSync(fd, bytes, 0, bytes.length, 0);
  const pid = Number.parseInt(bytes.toString('latin1', 0, length).trim(), 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

/** Whether `path` still names the file open as `fd`. */
function stillAtPath(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = statSync(path);
    return open.ino === named.ino && open.dev === named.dev;
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return false;
    throw error;
  }
}

export class DirectoryLock {
  readonly directory: string;
  readonly #lockPath: string;
  #fd: number | undefined;

  private constructor(directory: string, lockPath: string, fd: number) {
    this.directory = directory;
    this.#lockPath = lockPath;
    this.#fd = fd;
  }

  /**
   * Takes the directory (creating it), or throws `DatabaseLockedError`
   * naming the owner (pid 0 when the owner has not written its pid yet), or
   * `DataDirectoryError` when the path cannot be a directory.
   */
  static acquire(path: string): DirectoryLock {
    let directory: string;
    let isDirectory: boolean;
    try {
      createPrivately(path);
      directory = realpathSync(path);
      isDirectory = statSync(directory).isDirectory();
    } catch (error) {
      throw new DataDirectoryError(path, errnoOf(error) ?? String(error), { cause: error });
    }
    if (!isDirectory) throw new DataDirectoryError(path, 'ENOTDIR');
    if (heldHere.has(directory)) throw new DatabaseLockedError(directory, process.pid);
    const lockPath = join(directory, LOCK_FILE);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let fd: number;
      try {
        fd = openSync(lockPath, 'a+', 0o644);
      } catch (error) {
        throw new DataDirectoryError(directory, `its lock file cannot be opened (${errnoOf(error) ?? String(error)})`, {
          cause: error,
        });
      }
      let kept = false;
      try {
        if (!tryLock(fd)) throw new DatabaseLockedError(directory, readOwner(fd));
        if (!stillAtPath(fd, lockPath)) continue; // released and unlinked by its last owner: try the new file
        ftruncateSync(fd, 0);
        writeSync(fd, `${process.pid}\n`, 0);
        heldHere.add(directory);
        kept = true;
        return new DirectoryLock(directory, lockPath, fd);
      } catch (error) {
        if (error instanceof DatabaseLockedError) throw error;
        throw new DataDirectoryError(directory, `its lock file cannot be used (${errnoOf(error) ?? String(error)})`, {
          cause: error,
        });
      } finally {
        // Closing the descriptor is what drops a lock we do not keep.
        if (!kept) closeSync(fd);
      }
    }
    throw new DatabaseLockedError(directory, 0);
  }

  /** Gives the directory up: removes the lock file while still holding it, then closes it. */
  release(): void {
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined;
    heldHere.delete(this.directory);
    try {
      unlinkSync(this.#lockPath);
    } catch {
      // Left behind (e.g. no permission to remove it): harmless, since only the lock on it counts.
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Creates the data directory readable and writable by its owner only, as a
 * database's directory should be (the store, its lock and the admin record
 * the CLI trusts with the token live there); its parents, if missing, are
 * created as `mkdir -p` would. An existing directory keeps its mode.
 */
function createPrivately(path: string): void {
  mkdirSync(dirname(resolve(path)), { recursive: true });
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error;
  }
}
