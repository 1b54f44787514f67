// Between two measured runs, whatever system ran: the previous run's
// leftovers outside this process are not the next run's to pay for. Two
// kinds are left behind: dirty pages in the kernel's cache (a drained store
// or table, deleted or not, is still being written back and competes with
// the next run's fsyncs), and Postgres's own deferred work (a checkpoint of
// what graphile-worker wrote). Each run starts after both are done, so a
// system's number does not depend on which system ran before it.
//
// This process's heap is left alone. Forcing full garbage collections here
// (as this file once did) made V8 throw away its optimized code: the next
// jobtree drain compiled ~270 functions again instead of ~100, deoptimized
// 45 times instead of ~10, and ran 8-20% slower (100,000 jobs at 1 worker:
// 105-110k against 109-124k jobs/s in alternating runs), while graphile's
// numbers did not move (its work is in Postgres). A long-running service
// never sees that reset; the garbage of a run is collected during the next
// one by V8's own collections, as in any process.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PeerBenchError } from './errors.js';
import type { PgClient } from './peer-modules.js';

const run = promisify(execFile);

/** How long to let the machine settle after the work above (timers, sockets closing). */
const SETTLE_MS = 100;

export class Quiescer {
  readonly #postgres: PgClient | undefined;

  /** `postgres`: a superuser connection to the benchmark's Postgres, for CHECKPOINT; undefined without one. */
  constructor(postgres: PgClient | undefined) {
    this.#postgres = postgres;
  }

  /** Checkpoints Postgres and writes every dirty page back, then waits a moment; forces no garbage collection. */
  async quiesce(): Promise<void> {
    try {
      await this.#postgres?.query('CHECKPOINT');
      // sync(1): flushes every file system's dirty pages, and waits for them.
      await run('sync');
    } catch (error) {
      throw new PeerBenchError('server_failed', `could not settle the machine between runs: ${error instanceof Error ? error.message : String(error)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}
