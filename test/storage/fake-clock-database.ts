// An embedded database on a fake clock (the `now` option) that the test
// moves and that counts how often the engine reads it, in a fresh temporary
// folder closed and deleted when the test ends; and the helpers the tests
// of the 5-second transaction life share.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FdbError, FdbErrorCode, type Transaction } from '@jobtree/core';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';

export interface FakeClock {
  /** What the engine reads as the time, in ms: move it to make time pass. */
  now: number;
  /** How often the engine has read it. */
  reads: number;
}

export function openOnFakeClock(t: { teardown(fn: () => void | Promise<void>): void }, name: string): { db: EmbeddedDatabase; clock: FakeClock } {
  const dir = mkdtempSync(join(tmpdir(), `jobtree-${name}-`));
  const clock: FakeClock = { now: 1_000_000, reads: 0 };
  const db = EmbeddedDatabase.open({
    path: dir,
    now: () => {
      clock.reads++;
      return clock.now;
    },
  });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { db, clock };
}

export function isTooOld(error: unknown): boolean {
  return error instanceof FdbError && error.code === FdbErrorCode.transaction_too_old;
}

/** Runs `body` once (no retry): what it returned, or the error the attempt failed with. */
export async function attempt<T>(db: EmbeddedDatabase, body: (tx: Transaction) => Promise<T> | T): Promise<T | unknown> {
  try {
    return await db.doTransaction(body, { retryLimit: 0 });
  } catch (error) {
    return error;
  }
}
