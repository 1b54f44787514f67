// One owner per data directory. lmdb itself lets several processes share an
// environment, but the engine keeps its conflict log and read versions in
// memory, so a second owner would silently break isolation. The owner's pid
// lives in a lock file; a lock whose process is gone (kill -9) is taken over.

import { closeSync, mkdirSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseLockedError } from '../../errors.js';

const LOCK_FILE = 'jobtree.lock';

/** Directories this process holds, so a second open in the same process fails too. */
const heldHere = new Set<string>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(lockPath: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(lockPath, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export class DirectoryLock {
  readonly directory: string;
  readonly #lockPath: string;
  #held = true;

  private constructor(directory: string, lockPath: string) {
    this.directory = directory;
    this.#lockPath = lockPath;
  }

  /** Takes the directory (creating it), or throws `DatabaseLockedError` naming the owner. */
  static acquire(path: string): DirectoryLock {
    mkdirSync(path, { recursive: true });
    const directory = realpathSync(path);
    if (heldHere.has(directory)) throw new DatabaseLockedError(directory, process.pid);
    const lockPath = join(directory, LOCK_FILE);
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const fd = openSync(lockPath, 'wx');
        try {
          writeSync(fd, `${process.pid}\n`);
        } finally {
          closeSync(fd);
        }
        heldHere.add(directory);
        return new DirectoryLock(directory, lockPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = readOwner(lockPath);
      if (owner !== undefined && owner !== process.pid && processAlive(owner)) {
        throw new DatabaseLockedError(directory, owner);
      }
      // Stale (its process died, or it is our own pid left by a process
      // that reused it): take it over. Re-read right before unlinking so a
      // concurrent taker's fresh lock is not removed.
      if (readOwner(lockPath) === owner) {
        try {
          unlinkSync(lockPath);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    }
    throw new DatabaseLockedError(directory, readOwner(lockPath) ?? 0);
  }

  release(): void {
    if (!this.#held) return;
    this.#held = false;
    heldHere.delete(this.directory);
    try {
      if (readOwner(this.#lockPath) === process.pid) unlinkSync(this.#lockPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
