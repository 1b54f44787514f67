// A parked accept's watch may fail rather than fire: FoundationDB rejects a
// watch after its transaction committed (too many watches, a lost
// connection), and so may any other storage behind the `Database`
// interface. An accept whose wait ends that way while a write that claimed
// it commits must still return the jobs that write made running for it:
// nobody else holds their locks.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode } from '@jobtree/core';
import type { Bytes, Database, Transaction, TransactionOptions, Watch } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { ADD_AND_HANDOVER_WRITES } from './review-handover-setup.js';
import { openTempJobs, T1 } from './temp-jobs.js';
import { deferred } from '../deferred.js';

/** Passes everything through, but keeps a way to fail each watch made after `arm()`. */
class FailingWatches implements Database {
  readonly #inner: Database;
  readonly failers: ((error: unknown) => void)[] = [];

  constructor(inner: Database) {
    this.#inner = inner;
  }

  get kind() {
    return this.#inner.kind;
  }

  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    return this.#inner.doTransaction((tx) => body(this.#wrap(tx)), options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #wrap(tx: Transaction): Transaction {
    const failers = this.failers;
    return new Proxy(tx, {
      get(target, property) {
        if (property === 'watch') {
          return (key: Bytes): Watch => {
            const inner = target.watch(key);
            let fail!: (error: unknown) => void;
            const failed = new Promise<boolean>((_, reject) => {
              fail = reject;
            });
            failed.catch(() => {});
            failers.push(fail);
            const promise = Promise.race([inner.promise, failed]);
            promise.catch(() => {});
            return { promise, cancel: () => inner.cancel() };
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}

test('an accept whose watch fails while the add that claimed it commits still returns the job', async (t) => {
  let watches: FailingWatches | undefined;
  let arm = false;
  let holding = false;
  const { promise: atCommit, resolve: reached } = deferred();
  const { promise: hold, resolve: release } = deferred();
  let recorder: RecordingDatabase | undefined;
  const { jobs } = await openTempJobs(t, (inner) => {
    watches = new FailingWatches(inner);
    recorder = new RecordingDatabase(watches, {
      inject: (stats) => {
        if (arm && stats.writes >= ADD_AND_HANDOVER_WRITES) {
          arm = false;
          holding = true;
        }
        return undefined;
      },
      afterBody: () => {
        if (!holding) return undefined;
        holding = false;
        reached();
        return hold;
      },
    });
    return recorder;
  });
  const failing = watches as FailingWatches;
  const db = recorder as RecordingDatabase;
  const before = failing.failers.length;
  const accepting = jobs.accept(T1, { timeout: 60_000 }).then(
    (job) => ({ job, error: undefined as unknown }),
    (error: unknown) => ({ job: undefined, error }),
  );
  // Its watch made and its transaction committed (the accept parks in the
  // microtasks that follow, before any timer).
  while (failing.failers.length === before || db.committedWrites.length < db.transactions) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  arm = true;
  const adding = jobs.add(T1, 'claimed', {});
  await atCommit;
  // The add took the job for the accept and waits to commit; the accept's watch fails now.
  failing.failers.at(-1)?.(new FdbError(FdbErrorCode.operation_failed, 'injected watch failure (FoundationDB: too_many_watches, 1032)'));
  release();
  t.is(await adding, 'pending');
  const accepted = await accepting;
  const active = await jobs.getActiveJobIds(T1);
  t.log(`accept: ${accepted.job?.id ?? String(accepted.error)}, running: ${active.join() || 'none'}`);
  if (accepted.job === undefined) {
    t.deepEqual(active, [], 'the accept returned no job: none may be running under a lock nobody holds');
  } else {
    t.is(accepted.job.id, 'claimed');
    t.is(await jobs.finish(accepted.job), 'finished');
  }
  t.deepEqual((await checkJobsConsistency(jobs.database)).anomalies, []);
});
