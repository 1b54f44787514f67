// The pick of the pending queue's front (dequeuePending) on a transaction
// whose reads answer through promises (FoundationDB, or any wrapper of the
// embedded engine): the entries other accept batches of the process claim
// change while a page is being read (a batch in flight commits and gives
// its claims back, a write's hand-over claims more). Whether a page reached
// the end of the queue must be judged by the limit the page was read with,
// or a queue whose best priority is all scheduled later looks empty and
// the due jobs behind it are not taken.

import test from 'ava';
import type { KeyValue, Transaction } from '@jobtree/core';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { dequeuePending } from '../../packages/core/src/jobs/pending-queue.js';
import type { PendingClaims } from '../../packages/core/src/jobs/pending-queue.js';

/** A read-only transaction over fixed rows whose range reads answer through promises, calling `onRead` as each read starts. */
function promiseReads(rows: KeyValue[], onRead: () => void): Transaction {
  const sorted = [...rows].sort((a, b) => Buffer.compare(a.key, b.key));
  const reads = {
    get: () => Promise.resolve(undefined),
    getRange: (start: Uint8Array, end: Uint8Array, options?: { limit?: number; reverse?: boolean }) => {
      onRead();
      const inside = sorted.filter((row) => Buffer.compare(row.key, start) >= 0 && Buffer.compare(row.key, end) < 0);
      const page = inside.slice(0, options?.limit ?? Number.POSITIVE_INFINITY).map((row) => ({ key: Buffer.from(row.key), value: Buffer.from(row.value) }));
      return new Promise<KeyValue[]>((resolve) => setImmediate(() => resolve(page)));
    },
  };
  return { ...reads, snapshot: () => reads } as unknown as Transaction;
}

for (const change of ['released', 'grown'] as const) {
  test(`due jobs behind a page of later-scheduled ones are picked when the claims of other batches are ${change} during the read`, async (t) => {
    const keys = new JobKeys().forType('dq');
    const now = 1_700_000_000;
    const rows: KeyValue[] = [];
    // A full page of priority-5 jobs, all scheduled an hour later, then due priority-0 jobs.
    for (let i = 0; i < 60; i++) rows.push({ key: keys.pendingKey(5, now + 3_600, `later-${i}`), value: Buffer.alloc(0) });
    for (let i = 0; i < 5; i++) rows.push({ key: keys.pendingKey(0, now - 10, `due-${i}`), value: Buffer.alloc(0) });
    // Claims of another batch in flight: entries of some other queue (they match nothing here).
    const claimed = new Set<number>([1, 2, 3, 4]);
    const claims: PendingClaims = { claimed, claim: () => {} };
    let reads = 0;
    const tx = promiseReads(rows, () => {
      reads += 1;
      // While the first page is read, the other batch settles (or another claims more).
      if (reads === 1) {
        if (change === 'released') claimed.clear();
        else for (let i = 10; i < 20; i++) claimed.add(i);
      }
    });
    const result = await dequeuePending(tx, keys, now, 2, claims);
    t.deepEqual(
      result.jobs.map((job) => job.id).sort().map((id) => id.slice(0, 4)),
      ['due-', 'due-'],
      `picked ${result.jobs.map((job) => job.id).join(', ') || 'nothing'} in ${reads} reads`,
    );
  });
}
