// Between two measured runs, whatever system ran: the previous run's
// leftovers are not the next run's to pay for. Three kinds are left behind:
// garbage in this process's heap (each system's client runs here), dirty
// pages in the kernel's cache (a drained store or table, deleted or not, is
// still being written back and competes with the next run's fsyncs), and
// Postgres's own deferred work (a checkpoint of what graphile-worker wrote).
// Each run starts after all three are done, so a system's number does not
// depend on which system ran before it.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PeerBenchError } from './errors.js';
import type { PgClient } from './peer-modules.js';

// The collector is reachable from JavaScript only with --expose-gc; setting
// the flag at run time makes `gc` exist in contexts created afterwards.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
setFlagsFromString('--no-expose-gc');

const run = promisify(execFile);

/** How long to let the machine settle after the work above (timers, sockets closing). */
const SETTLE_MS = 100;

export class Quiescer {
  readonly #postgres: PgClient | undefined;

  /** `postgres`: a superuser connection to the benchmark's Postgres, for CHECKPOINT; undefined without one. */
  constructor(postgres: PgClient | undefined) {
    this.#postgres = postgres;
  }

  /** Collects this process's garbage, checkpoints Postgres and writes every dirty page back, then waits a moment. */
  async quiesce(): Promise<void> {
    try {
      await this.#postgres?.query('CHECKPOINT');
      // sync(1): flushes every file system's dirty pages, and waits for them.
      await run('sync');
    } catch (error) {
      throw new PeerBenchError('server_failed', `could not settle the machine between runs: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Twice: objects with finalizers (sockets, lmdb handles) need a second pass.
    collectGarbage();
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}
