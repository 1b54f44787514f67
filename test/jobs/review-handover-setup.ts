// What the review tests of the hand-over share: a jobs handle on a recording
// database that can hold one write attempt between its body and its commit
// (after it took jobs for a parked accept) and then let it commit or fail,
// a second handle on the same store (another process, as far as the first
// handle's parked accepts know), and a wait until an accept is parked.

import type { ExecutionContext } from 'ava';
import { openJobs } from '@jobtree/core';
import type { Database, FdbError, Jobs } from '@jobtree/core';
import { SettleCounting, sleep } from './handover-setup.js';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs } from './temp-jobs.js';

/** Writes of an add of a new job (record, pending key, counter, activity stamp). */
export const ADD_WRITES = 4;
/** ADD_WRITES plus those of taking the job (pending key cleared, record, activity row). */
export const ADD_AND_HANDOVER_WRITES = ADD_WRITES + 3;

export interface HeldAttempt {
  /** Resolves once an attempt reached the writes and its body returned: it waits to commit. */
  reached: Promise<void>;
  /** Lets the attempt go on to its commit, or fail with `error` instead. */
  release(error?: FdbError): void;
}

export interface ReviewSetup {
  jobs: Jobs;
  db: RecordingDatabase;
  /** A second handle on the same store: its writes serve none of `jobs`'s parked accepts. */
  other: Jobs;
  /** The next attempt that reaches `writes` writes waits, after its body, until released. */
  holdAttemptAt(writes: number): HeldAttempt;
  /** Resolves once an accept started after `watchesBefore` watches has armed its watch (it parks in the same turn). */
  parked(watchesBefore: number): Promise<void>;
  /** Transactions that wrote something and committed, so far. */
  durableCommits(): number;
}

export async function openReviewJobs(t: ExecutionContext): Promise<ReviewSetup> {
  let raw: Database | undefined;
  let db: RecordingDatabase | undefined;
  let settling: SettleCounting | undefined;
  let armed: { writes: number; hold: Promise<void>; reached: () => void } | undefined;
  /** The held attempt, between the write that reached the mark and the end of its body. */
  let holding: { hold: Promise<void>; reached: () => void } | undefined;
  const { jobs } = await openTempJobs(t, (inner) => {
    raw = inner;
    db = new RecordingDatabase(inner, {
      inject: (stats) => {
        if (armed !== undefined && stats.writes >= armed.writes) {
          holding = armed;
          armed = undefined;
        }
        return undefined;
      },
      afterBody: () => {
        const held = holding;
        if (held === undefined) return undefined;
        holding = undefined;
        held.reached();
        return held.hold;
      },
    });
    settling = new SettleCounting(db);
    return settling;
  });
  const transactions = settling as SettleCounting;
  const recorder = db as RecordingDatabase;
  const other = await openJobs({ database: raw as Database });
  t.teardown(() => other.close());
  return {
    jobs,
    db: recorder,
    other,
    holdAttemptAt(writes) {
      let reached!: () => void;
      let release!: (error?: FdbError) => void;
      const reachedPromise = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const hold = new Promise<void>((resolve, reject) => {
        release = (error) => (error === undefined ? resolve() : reject(error));
      });
      armed = { writes, hold, reached };
      return { reached: reachedPromise, release };
    },
    async parked(watchesBefore) {
      // The watch is made in the accept's transaction; the accept parks in
      // the microtasks after that transaction returns, before any timer.
      while (recorder.calls.watches === watchesBefore || transactions.settled < transactions.started) await sleep(5);
    },
    durableCommits: () => recorder.committedWrites.filter((writes) => writes > 0).length,
  };
}

export { sleep };

/** Whether `promise` has settled by the time the current macrotask queue drains once. */
export async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}
