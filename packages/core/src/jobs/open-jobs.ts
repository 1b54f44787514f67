// `openJobs`: the jobs API on a store. On the embedded store, by path, the
// store is shared by every process of the machine that opens it: the first
// owns it and serves the others (see the sharing folder). On FoundationDB,
// or on a database you opened, the handle runs its own transactions.

import { DEFAULT_DATA_PATH, openDatabase } from '../storage/open-database.js';
import { SharedJobs } from '../sharing/shared-jobs.js';
import { servedJobsCalls } from '../sharing/served-jobs-calls.js';
import { StoreSharing } from '../sharing/store-sharing.js';
import type { EmbeddedOptions } from '../storage/interfaces.js';
import type { OpenJobsOptions, SharingOptions } from './interfaces.js';
import { checkOpenJobsOptions } from './job-input.js';
import { type Jobs, JobsHandle } from './jobs.js';
import { checkJobsClock } from './jobs-clock.js';

/**
 * Opens the store (or shares `options.database`) and returns the jobs API
 * on it. On the embedded store, a process that finds the store owned by
 * another becomes its client (see `role`), and takes the store over when
 * that owner goes.
 */
export async function openJobs(options?: OpenJobsOptions): Promise<Jobs> {
  checkOpenJobsOptions(options);
  const clock = checkJobsClock(options?.clock);
  const withClock = clock === undefined ? {} : { clock };
  if (options !== undefined && 'database' in options) return new JobsHandle(options.database, { ownsDatabase: false, ...withClock });
  if (options !== undefined && 'clusterFile' in options && options.clusterFile !== undefined) {
    const { clock: _clock, ...storage } = options;
    return new JobsHandle(await openDatabase(storage), { ownsDatabase: true, ...withClock });
  }
  const embedded = options as (EmbeddedOptions & SharingOptions) | undefined;
  const sharing = await StoreSharing.open({
    path: embedded?.path ?? DEFAULT_DATA_PATH,
    ...(embedded?.durability !== undefined ? { durability: embedded.durability } : {}),
    ...(embedded?.role !== undefined ? { role: embedded.role } : {}),
    ...(embedded?.ownerWaitMs !== undefined ? { ownerWaitMs: embedded.ownerWaitMs } : {}),
  });
  const jobs = new SharedJobs(sharing, { ownsSharing: true, ...withClock });
  for (const [name, method] of servedJobsCalls(() => jobs.handle as Jobs)) sharing.serve(name, method);
  sharing.startServing();
  return jobs;
}
