// What the hand-over tests share: a recording database that can fail the
// attempt in which a write takes a job for a parked accept, run an action
// inside it, or hold it between its body and its commit and then let it
// commit or fail; a jobs handle on it, and a second handle on the same store
// for the tests that need one (another process, as far as the first handle's
// parked accepts know); a wait until an accept is parked; and the count of
// durable commits.

import type { ExecutionContext } from 'ava';
import { openJobs } from '@jobtree/core';
import type { Database, FdbError, Jobs, Transaction, TransactionOptions } from '@jobtree/core';
import { RecordingDatabase } from '../recording-database.js';
import { openTempJobs } from '../temp-jobs.js';

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

/** A database that records the attempts of the writes that hand jobs over, and can fail, act in or hold one of them. */
export interface HandoverDatabase {
  /** What a jobs handle runs on: `db`, counting the transactions that settled. */
  database: Database;
  db: RecordingDatabase;
  /** The next `times` attempts that reach `writes` writes fail with `error`. */
  failAt(writes: number, error: FdbError, times?: number): void;
  /** Runs `action` inside the next attempt that reaches `writes` writes (once), as that write is made. */
  duringAttempt(writes: number, action: () => void): void;
  /** Resolves with the range reads made so far once the next attempt that reached `writes` writes has run its body. */
  rangeReadsAfterBody(writes: number): Promise<number>;
  /** The next attempt that reaches `writes` writes waits, after its body, until released. */
  holdAttemptAt(writes: number): HeldAttempt;
  /** Resolves once an accept started after `watchesBefore` watches has armed its watch and parked. */
  parked(watchesBefore: number): Promise<void>;
  /** Transactions that wrote something and committed, so far. */
  durableCommits(): number;
}

export function recordHandovers(inner: Database): HandoverDatabase {
  const failure = { writes: 0, error: undefined as FdbError | undefined, times: 0 };
  const hook = { writes: 0, action: undefined as (() => void) | undefined };
  const afterBody = { writes: 0, reached: false, report: undefined as ((reads: number) => void) | undefined };
  let armed: { writes: number; hold: Promise<void>; reached: () => void } | undefined;
  /** The held attempt, between the write that reached the mark and the end of its body. */
  let holding: { hold: Promise<void>; reached: () => void } | undefined;
  const db: RecordingDatabase = new RecordingDatabase(inner, {
    inject: (stats) => {
      if (afterBody.report !== undefined && stats.writes >= afterBody.writes) afterBody.reached = true;
      if (armed !== undefined && stats.writes >= armed.writes) {
        holding = armed;
        armed = undefined;
      }
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
        report(db.calls.rangeReads);
      }
      const held = holding;
      if (held === undefined) return undefined;
      holding = undefined;
      held.reached();
      return held.hold;
    },
  });
  const transactions = new SettleCounting(db);
  return {
    database: transactions,
    db,
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
      // The watch is made in the accept's transaction; the accept parks as
      // that transaction returns, in the microtasks that follow, before any
      // timer runs.
      while (db.calls.watches === watchesBefore || transactions.settled < transactions.started) await sleep(5);
      // The accept's empty answer marked its turn as one in which the handle
      // answered calls, and a write made in such a turn waits for the next
      // one instead of starting its transaction at once. The poll above may
      // run in that same turn (its timer due with the commit's callbacks):
      // let the turn end, so the test's next write finds the handle idle.
      await new Promise((resolve) => setImmediate(resolve));
    },
    durableCommits: () => db.committedWrites.filter((writes) => writes > 0).length,
  };
}

export interface HandoverSetup extends HandoverDatabase {
  jobs: Jobs;
  /** The store's directory. */
  dir: string;
  /** Opens a second handle on the same store, closed when the test ends: its writes serve none of `jobs`'s parked accepts. */
  openOther(): Promise<Jobs>;
}

/** A jobs handle on a temporary store through `recordHandovers`; `wrap` goes between the store and the recording. */
export async function openHandoverJobs(
  t: ExecutionContext,
  wrap: (database: Database) => Database = (database) => database,
): Promise<HandoverSetup> {
  let raw: Database | undefined;
  let recorded: HandoverDatabase | undefined;
  const { jobs, dir } = await openTempJobs(t, (inner) => {
    raw = inner;
    recorded = recordHandovers(wrap(inner));
    return recorded.database;
  });
  return {
    ...(recorded as HandoverDatabase),
    jobs,
    dir,
    async openOther() {
      const other = await openJobs({ database: raw as Database });
      t.teardown(() => other.close());
      return other;
    },
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
