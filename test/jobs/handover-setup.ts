// What the hand-over tests share: a jobs handle on a recording database
// that can fail the attempt in which an add takes a job for a parked accept,
// a wait until an accept is parked, and the count of durable commits.

import type { ExecutionContext } from 'ava';
import type { Database, FdbError, Jobs, Transaction, TransactionOptions } from '@jobtree/core';
import { RecordingDatabase } from './recording-database.js';
import { openTempJobs } from './temp-jobs.js';

/** Writes of an add of a new job (record, pending key, counter, activity stamp). */
export const ADD_WRITES = 4;
/** ADD_WRITES plus those of taking the job (pending key cleared, record, activity row). */
export const ADD_AND_HANDOVER_WRITES = ADD_WRITES + 3;

export interface HandoverSetup {
  jobs: Jobs;
  db: RecordingDatabase;
  /** The next `times` attempts that reach `writes` writes fail with `error`. */
  failAt(writes: number, error: FdbError, times?: number): void;
  /** Runs `action` inside the next attempt that reaches `writes` writes (once), as that write is made. */
  duringAttempt(writes: number, action: () => void): void;
  /** Resolves with the range reads made so far once the next attempt that reached `writes` writes has run its body. */
  rangeReadsAfterBody(writes: number): Promise<number>;
  /** Resolves once an accept started after `watchesBefore` watches has armed its watch and parked. */
  parked(watchesBefore: number): Promise<void>;
  /** Transactions that wrote something and committed, so far. */
  durableCommits(): number;
}

export async function openHandoverJobs(t: ExecutionContext): Promise<HandoverSetup> {
  const failure = { writes: 0, error: undefined as FdbError | undefined, times: 0 };
  const hook = { writes: 0, action: undefined as (() => void) | undefined };
  const afterBody = { writes: 0, reached: false, report: undefined as ((reads: number) => void) | undefined };
  let db: RecordingDatabase | undefined;
  let settling: SettleCounting | undefined;
  const { jobs } = await openTempJobs(t, (inner) => {
    db = new RecordingDatabase(inner, {
      inject: (stats) => {
        if (afterBody.report !== undefined && stats.writes >= afterBody.writes) afterBody.reached = true;
        if (hook.action !== undefined && stats.writes >= hook.writes) {
          const action = hook.action;
          hook.action = undefined;
          action();
        }
        if (failure.times === 0 || stats.writes < failure.writes) return undefined;
        failure.times -= 1;
        return failure.error;
      },
      afterBody: () => {
        if (afterBody.reached && afterBody.report !== undefined) {
          const report = afterBody.report;
          afterBody.report = undefined;
          afterBody.reached = false;
          report((db as RecordingDatabase).calls.rangeReads);
        }
        return undefined;
      },
    });
    settling = new SettleCounting(db);
    return settling;
  });
  const recorder = db as RecordingDatabase;
  const transactions = settling as SettleCounting;
  return {
    jobs,
    db: recorder,
    failAt(writes, error, times = 1) {
      failure.writes = writes;
      failure.error = error;
      failure.times = times;
    },
    duringAttempt(writes, action) {
      hook.writes = writes;
      hook.action = action;
    },
    rangeReadsAfterBody(writes) {
      return new Promise((resolve) => {
        afterBody.writes = writes;
        afterBody.reached = false;
        afterBody.report = resolve;
      });
    },
    async parked(watchesBefore) {
      // The watch is made in the accept's transaction; the accept parks as
      // that transaction returns, in the microtasks that follow, before any
      // timer runs.
      while (recorder.calls.watches === watchesBefore || transactions.settled < transactions.started) await sleep(5);
    },
    durableCommits: () => recorder.committedWrites.filter((writes) => writes > 0).length,
  };
}

/** Counts the transactions started and settled (committed or failed) through it. */
export class SettleCounting implements Database {
  readonly #inner: Database;
  started = 0;
  settled = 0;

  constructor(inner: Database) {
    this.#inner = inner;
  }

  get kind() {
    return this.#inner.kind;
  }

  doTransaction<T>(body: (tx: Transaction) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    this.started += 1;
    const result = this.#inner.doTransaction(body, options);
    // Registered before the caller's own callbacks: counted before the caller resumes.
    result.then(this.#settle, this.#settle);
    return result;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  readonly #settle = (): void => {
    this.settled += 1;
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
