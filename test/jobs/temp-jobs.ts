// Opens a Jobs handle on a fresh embedded database in its own temp dir, with
// the two job types of the couch_jobs test setup, and removes it all at the
// end of the test.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { openDatabase, openJobs } from '@jobtree/core';
import type { Database, Jobs } from '@jobtree/core';

export const T1 = 't1';
export const T2 = 't2';
export const T1_TIMEOUT = 2;
export const T2_TIMEOUT = 3;

export interface TempJobs {
  jobs: Jobs;
  database: Database;
  dir: string;
}

export async function openTempJobs(
  t: ExecutionContext,
  wrap: (database: Database) => Database = (database) => database,
): Promise<TempJobs> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-jobs-test-'));
  const raw = await openDatabase({ path: dir });
  const database = wrap(raw);
  const jobs = await openJobs({ database });
  t.teardown(async () => {
    await jobs.close();
    await raw.close();
    await rm(dir, { recursive: true, force: true });
  });
  await jobs.setTypeTimeout(T1, T1_TIMEOUT);
  await jobs.setTypeTimeout(T2, T2_TIMEOUT);
  return { jobs, database, dir };
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
