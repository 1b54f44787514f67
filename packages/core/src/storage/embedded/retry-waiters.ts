// The retries of the embedded engine's transactions that lost a conflict,
// each waiting for the commit it lost to to become durable (and so
// readable): a retry sooner would read the same old version and lose again.
//
// Losers on a hot key would otherwise all retry at once and all but one
// lose again. So the waiter with the most failed attempts is woken first,
// and the others a macrotask later, each only if its last read set does
// not already conflict with a newer, not yet durable commit (typically
// the first one's); if it does, it waits for that commit in turn, keeping
// its place. Every transaction gets its turn and few retries are wasted.

import type { ConflictLog } from './conflict-log.js';

/** A transaction that lost a conflict, waiting to retry. */
interface RetryWaiter {
  /** Wake once this version is durable. */
  version: number;
  /** Failed attempts so far: higher goes first. */
  priority: number;
  /** What the lost attempt read: a retry would read it again. */
  readKeys: readonly string[];
  readRanges: ReadonlyArray<readonly [Buffer, Buffer]>;
  resolve: () => void;
}

export class RetryWaiters {
  readonly #log: ConflictLog;
  /** The newest batch that was published or failed. */
  readonly #passedVersion: () => number;
  /** The newest commit version handed out (durable or not). */
  readonly #lastVersion: () => number;
  #waiters: RetryWaiter[] = [];
  #recheckQueued = false;

  constructor(log: ConflictLog, passedVersion: () => number, lastVersion: () => number) {
    this.#log = log;
    this.#passedVersion = passedVersion;
    this.#lastVersion = lastVersion;
  }

  /** Resolves when a retry that lost to the commit at `version` should run (the caller checked it has not passed). */
  wait(
    version: number,
    priority: number,
    readKeys: readonly string[],
    readRanges: ReadonlyArray<readonly [Buffer, Buffer]>,
  ): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ version, priority, readKeys, readRanges, resolve }));
  }

  /** Wakes the first retry whose wait is over (`passed`: durable, or failed and so never to be read). */
  wake(passed: number): void {
    if (!this.#waiters.some((w) => w.version <= passed)) return;
    this.#wakeWaiters(1);
    if (this.#waiters.some((w) => w.version <= this.#passedVersion()) && !this.#recheckQueued) {
      this.#recheckQueued = true;
      setImmediate(() => {
        this.#recheckQueued = false;
        this.#wakeWaiters(Number.POSITIVE_INFINITY);
      });
    }
  }

  /** Wakes every retry at once (the database is closing: each will find it closed). */
  wakeAll(): void {
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters = [];
  }

  /**
   * Wakes up to `limit` waiters whose version has passed, highest priority
   * first, skipping (and re-arming for the newest version) those whose last
   * read set conflicts with a commit that is not durable yet.
   */
  #wakeWaiters(limit: number): void {
    const passedVersion = this.#passedVersion();
    const ready = this.#waiters.filter((w) => w.version <= passedVersion);
    // Stable sort: equal priorities keep their arrival order.
    ready.sort((a, b) => b.priority - a.priority);
    const woken = new Set<RetryWaiter>();
    for (const waiter of ready) {
      if (woken.size >= limit) break;
      // Only commits after the passed version count: older ones are readable now (or failed, never to be read).
      if (this.#log.conflicts(passedVersion, waiter.readKeys, waiter.readRanges)) waiter.version = this.#lastVersion();
      else woken.add(waiter);
    }
    if (woken.size === 0) return;
    this.#waiters = this.#waiters.filter((w) => !woken.has(w));
    for (const waiter of woken) waiter.resolve();
  }
}
