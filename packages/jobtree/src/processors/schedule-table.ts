// Re-creates couch_replicator_scheduler's decisions (its ets table of jobs
// and the reschedule cycle) as pure logic: no timers, no I/O, the time is an
// argument. The runtime (scheduler.ts) carries the decisions out.

import { SchedulerError } from './errors.js';
import {
  type HistoryEvent,
  backoffMs,
  consecutiveCrashes,
  lastStarted,
  notRecentlyCrashed,
  oldestJobFirst,
  withEvent,
} from './history.js';
import type { SchedulerOptions } from './interfaces.js';
import { type ResolvedSchedulerOptions, resolveSchedulerOptions } from './processor-options.js';

/** One job as the scheduler tracks it. */
export interface ScheduleEntry {
  readonly id: string;
  // `running` and `held` change only through the table's methods (it indexes them).
  /** Continuous jobs may be rotated out; one-shot jobs run to the end once started. */
  continuous: boolean;
  /** Its handler runs. */
  running: boolean;
  /**
   * The scheduler holds the job (it accepted it and owns its lock), so it can
   * start it. A job given back to the queue stays in the table, not held, to
   * keep its history and crash count until it comes back.
   */
  held: boolean;
  /** Newest first, at most `maxHistory` events. */
  history: HistoryEvent[];
  /**
   * Crashes in a row, like the history's count but not bounded by its
   * length (attempts and backoffs are counted on it). A job new to the table
   * starts from the failed attempts the store kept for it.
   */
  failures: number;
  /**
   * Epoch ms before which the job may not start again, set by a crash from
   * its backoff; undefined when no crash set it (the history's default
   * schedule then decides, see `notRecentlyCrashed`).
   */
  retryAt?: number;
}

/** What a reschedule changed: jobs to start and jobs to stop (net: a job stopped and restarted in one cycle is in neither). */
export interface RescheduleResult {
  started: string[];
  stopped: string[];
}

export interface CrashResult {
  entry: ScheduleEntry;
  /** `retry`: the job stays, to run again after `backoffMs`; `failed`: out of attempts (`backoffMs` 0), it left the table. */
  outcome: 'retry' | 'failed';
  backoffMs: number;
}

/** Counts and average ages in seconds (since the job's last event) of each kind of job. */
export interface SchedulerStats {
  total: number;
  pending: number;
  running: number;
  crashed: number;
  averageAgeSeconds: { pending: number; running: number; crashed: number };
}

/** What a fill with nothing to start resolves with (shared: no array made for it). */
const NONE: ScheduleEntry[] = [];
Object.freeze(NONE);

/** Entries that are not held are forgotten this long after their backoff ends. */
const FORGET_AFTER_MS = 10 * 60_000;

export class ScheduleTable {
  readonly #entries = new Map<string, ScheduleEntry>();
  // Indexes kept in step with the entries' flags, so the per-job paths (add,
  // start, end, fill) cost no scan of the whole table.
  readonly #startable = new Set<ScheduleEntry>();
  #running = 0;
  #options: ResolvedSchedulerOptions;

  constructor(options?: SchedulerOptions) {
    this.#options = resolveSchedulerOptions(options);
  }

  get options(): Readonly<ResolvedSchedulerOptions> {
    return this.#options;
  }

  /** Changes options between cycles (they apply from the next decision on). */
  configure(options: SchedulerOptions): void {
    this.#options = resolveSchedulerOptions({ ...this.#options, ...options });
  }

  get size(): number {
    return this.#entries.size;
  }

  get(id: string): ScheduleEntry | undefined {
    return this.#entries.get(id);
  }

  entries(): IterableIterator<ScheduleEntry> {
    return this.#entries.values();
  }

  /** Puts an entry in as it is (a restore, or a test's fixture); its flags change through the table from then on. */
  insert(entry: ScheduleEntry): void {
    this.remove(entry.id);
    this.#entries.set(entry.id, entry);
    this.#index(entry);
  }

  /**
   * A job the scheduler now holds: a new entry with an `added` event and
   * `attempts` crashes in a row (the failed attempts the store kept for it:
   * counted before a restart, or by another process), or an entry it knew
   * (given back earlier) held again, its history and count kept.
   */
  add(id: string, continuous: boolean, now: number, attempts = 0): ScheduleEntry {
    const known = this.#entries.get(id);
    if (known !== undefined) {
      known.continuous = continuous;
      this.#flag(known, known.running, true);
      return known;
    }
    const entry: ScheduleEntry = {
      id,
      continuous,
      running: false,
      held: true,
      history: [{ type: 'added', at: now }],
      failures: attempts,
    };
    this.#entries.set(id, entry);
    this.#index(entry);
    return entry;
  }

  /**
   * A job new to the table that starts at once: what `add` and then a fill
   * that picks it do, without passing it through the pending jobs. Only
   * while a slot is free and no held job waits to start: a fill would then
   * start this job first (never started, due). Undefined, with nothing
   * changed, otherwise, or when the table knows the job: `add` it then.
   * The scheduler starts the jobs a take brings this way, one per job it
   * runs, so they cost no entry and removal in the pending set nor a
   * history array made for the `added` event alone.
   */
  addStarted(id: string, continuous: boolean, now: number, attempts = 0): ScheduleEntry | undefined {
    if (this.#running >= this.#options.maxJobs || this.#startable.size > 0 || this.#entries.has(id)) return undefined;
    const started: HistoryEvent = { type: 'started', at: now };
    const entry: ScheduleEntry = {
      id,
      continuous,
      running: true,
      held: true,
      history: this.#options.maxHistory > 1 ? [started, { type: 'added', at: now }] : [started],
      failures: attempts,
    };
    this.#entries.set(id, entry);
    this.#index(entry);
    return entry;
  }

  /** Drops a job (it finished, failed for good, or was removed). */
  remove(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    this.#unindex(entry);
    return this.#entries.delete(id);
  }

  /** The job went back to the queue: the scheduler no longer holds it. */
  release(id: string): void {
    const entry = this.#entries.get(id);
    if (entry !== undefined) this.#flag(entry, entry.running, false);
  }

  get runningCount(): number {
    return this.#running;
  }

  /** Held jobs that are not running. */
  get pendingCount(): number {
    return this.#startable.size;
  }

  /** Whether `entry` is out of its backoff at `now`. */
  #due(entry: ScheduleEntry, now: number): boolean {
    return entry.retryAt === undefined ? notRecentlyCrashed(entry.history, now, this.#options.healthThreshold) : entry.retryAt <= now;
  }

  /** Up to `count` held, not running jobs out of their backoff, the one that started longest ago first. */
  pendingJobs(count: number, now: number): ScheduleEntry[] {
    if (count <= 0) return [];
    // Jobs that never started sort first, in insertion order (the sort is
    // stable): when `count` of them lead the set, they are the answer, found
    // without sorting the whole set (a local queue makes it long, and a slot
    // that frees asks for one job).
    const neverStarted: ScheduleEntry[] = [];
    for (const entry of this.#startable) {
      if (lastStarted(entry.history) !== 0 || !this.#due(entry, now)) continue;
      neverStarted.push(entry);
      if (neverStarted.length === count) return neverStarted;
    }
    const candidates: ScheduleEntry[] = [];
    for (const entry of this.#startable) {
      if (this.#due(entry, now)) candidates.push(entry);
    }
    // Stable on equal start times: insertion order, like the queue they came from.
    candidates.sort(oldestJobFirst);
    return candidates.slice(0, count);
  }

  /** Marks a job started. */
  start(id: string, now: number): ScheduleEntry {
    const entry = this.#require(id);
    if (!entry.running) this.#start(entry, now);
    return entry;
  }

  #start(entry: ScheduleEntry, now: number): void {
    this.#flag(entry, true, true);
    entry.history = withEvent(entry.history, { type: 'started', at: now }, this.#options.maxHistory);
  }

  /** Marks a running job stopped (not a crash); a clean stop ends a streak of crashes. */
  /**
   * Records that a run ended because another job's handler took its thread
   * down: the job may start again at once, and its crash streak is kept.
   */
  lose(id: string, now: number, reason: string): ScheduleEntry {
    const entry = this.#require(id);
    if (!entry.running) return entry;
    this.#flag(entry, false, entry.held);
    entry.history = withEvent(entry.history, { type: 'lost', at: now, reason }, this.#options.maxHistory);
    return entry;
  }

  stop(id: string, now: number, reason?: string): ScheduleEntry {
    const entry = this.#require(id);
    if (!entry.running) return entry;
    this.#flag(entry, false, entry.held);
    const event: HistoryEvent = reason === undefined ? { type: 'stopped', at: now } : { type: 'stopped', at: now, reason };
    entry.history = withEvent(entry.history, event, this.#options.maxHistory);
    entry.failures = 0;
    entry.retryAt = undefined;
    return entry;
  }

  /**
   * Records a crash. With attempts left (consecutive crashes below
   * `attempts`; 0 gives the job up whatever its count) the job stays, to
   * run again after `backoff` of its crashes in a row (those before a
   * restart included); out of attempts it leaves the table.
   */
  crash(id: string, reason: string, now: number, attempts = Number.POSITIVE_INFINITY, backoff: (crashes: number) => number = backoffMs): CrashResult {
    const entry = this.#require(id);
    const previous = entry.history[0];
    const healthy = previous !== undefined && now - previous.at > this.#options.healthThreshold * 1000;
    entry.failures = healthy ? 1 : entry.failures + 1;
    this.#flag(entry, false, entry.held);
    entry.history = withEvent(entry.history, { type: 'crashed', at: now, reason }, this.#options.maxHistory);
    if (entry.failures >= attempts) {
      this.remove(id);
      return { entry, outcome: 'failed', backoffMs: 0 };
    }
    const wait = backoff(entry.failures);
    entry.retryAt = now + wait;
    return { entry, outcome: 'retry', backoffMs: wait };
  }

  /** Starts pending jobs into free slots (after an add, a finish or a crash). Resolves with the started ids. */
  fill(now: number): string[] {
    return this.fillEntries(now).map((entry) => entry.id);
  }

  /** {@link fill}, resolving with the started entries themselves: the scheduler starts their runs without looking them up again. */
  fillEntries(now: number): ScheduleEntry[] {
    const running = this.#running;
    if (running >= this.#options.maxJobs || this.#startable.size === 0) return NONE;
    return this.#startJobs(this.#options.maxJobs - running, now);
  }

  /**
   * One scheduling cycle: stop jobs above `maxJobs` (continuous ones first,
   * oldest start first), start pending jobs into free slots, and when the
   * slots were full and jobs waited, rotate up to `maxChurn` continuous jobs
   * out for them. As in the original, every step decides on the counts
   * taken at the start of the cycle.
   */
  reschedule(now: number): RescheduleResult {
    const before = new Set<string>();
    for (const entry of this.#entries.values()) if (entry.running) before.add(entry.id);
    const running = before.size;
    const pending = this.pendingCount;
    const { maxJobs, maxChurn } = this.#options;
    const excess = running - maxJobs;
    if (excess > 0) {
      const stopped = this.#stopJobs(excess, true, now);
      if (excess - stopped > 0) this.#stopJobs(excess - stopped, false, now);
    }
    if (running < maxJobs && pending > 0) this.#startJobs(maxJobs - running, now);
    if (running === maxJobs && pending > 0) {
      const rotate = Math.min(pending, running, maxChurn);
      const stopped = this.#stopJobs(rotate, true, now);
      this.#startJobs(stopped, now);
    }
    const result: RescheduleResult = { started: [], stopped: [] };
    for (const entry of this.#entries.values()) {
      if (entry.running && !before.has(entry.id)) result.started.push(entry.id);
      if (!entry.running && before.has(entry.id)) result.stopped.push(entry.id);
    }
    return result;
  }

  /**
   * Counts and average ages of pending (held or given back), running and
   * crashed jobs: the table's, and `beside` (jobs the scheduler holds
   * outside the table, its local queue's).
   */
  stats(now: number, beside: readonly ScheduleEntry[] = []): SchedulerStats {
    const sums = { pending: 0, running: 0, crashed: 0 };
    const counts = { pending: 0, running: 0, crashed: 0 };
    for (const entry of beside.length === 0 ? this.#entries.values() : [...this.#entries.values(), ...beside]) {
      const kind = entry.running ? 'running' : entry.history[0]?.type === 'crashed' ? 'crashed' : 'pending';
      const since = entry.running ? lastStarted(entry.history) : (entry.history[0]?.at ?? now);
      sums[kind] += Math.max(0, Math.round((now - since) / 1000));
      counts[kind]++;
    }
    const average = (kind: keyof typeof sums): number => (counts[kind] === 0 ? 0 : Math.round(sums[kind] / counts[kind]));
    return {
      total: this.#entries.size + beside.length,
      ...counts,
      averageAgeSeconds: { pending: average('pending'), running: average('running'), crashed: average('crashed') },
    };
  }

  /**
   * Forgets jobs given back long ago (another node may have run them since):
   * an entry that is not held is dropped once its backoff has ended and 10
   * more minutes have passed. Resolves with the forgotten ids.
   */
  forget(now: number): string[] {
    const forgotten: string[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.held || entry.running) continue;
      const last = entry.history[0]?.at ?? 0;
      const due = entry.retryAt ?? last + backoffMs(consecutiveCrashes(entry.history, this.#options.healthThreshold));
      if (now - due > FORGET_AFTER_MS) forgotten.push(entry.id);
    }
    for (const id of forgotten) this.remove(id);
    return forgotten;
  }

  #startJobs(count: number, now: number): ScheduleEntry[] {
    // The entries at hand, not looked up again by id: this runs for every job a scheduler starts.
    const entries = this.pendingJobs(count, now);
    for (const entry of entries) if (!entry.running) this.#start(entry, now);
    return entries;
  }

  /** Stops up to `count` running jobs of one kind, the one that started longest ago first. */
  #stopJobs(count: number, continuous: boolean, now: number): number {
    if (count <= 0) return 0;
    const running = [...this.#entries.values()].filter((entry) => entry.running && entry.continuous === continuous);
    running.sort(oldestJobFirst);
    const chosen = running.slice(0, count);
    for (const entry of chosen) this.stop(entry.id, now);
    return chosen.length;
  }

  #flag(entry: ScheduleEntry, running: boolean, held: boolean): void {
    this.#unindex(entry);
    entry.running = running;
    entry.held = held;
    this.#index(entry);
  }

  #index(entry: ScheduleEntry): void {
    if (entry.running) this.#running++;
    else if (entry.held) this.#startable.add(entry);
  }

  #unindex(entry: ScheduleEntry): void {
    if (entry.running) this.#running--;
    else this.#startable.delete(entry);
  }

  #require(id: string): ScheduleEntry {
    const entry = this.#entries.get(id);
    if (entry === undefined) throw new SchedulerError('not_found', `the scheduler has no job ${JSON.stringify(id)}`);
    return entry;
  }
}
