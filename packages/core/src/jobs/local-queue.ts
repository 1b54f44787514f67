// A local queue, like graphile-worker's: it takes jobs of one type in
// batches with `acceptMany` and hands them out, so that many consumers share
// one accept transaction per batch instead of making one each. The next
// batch is taken while the consumers run the previous one and while their
// finishes commit, so the process does not stop to wait for each commit in
// turn. Two kinds of consumer take from it (see LocalQueueConsumer):
// workers, one job per `take()`, and an owner of slots (the processors'
// scheduler), which is offered the jobs a take brings and takes those the
// queue holds as its slots free up (`takeReady()`).
//
// A taken job is running in the store from the moment its batch commits.
// So the queue holds a bounded number of jobs that nobody has started
// (workers: `size`; slots: the free slots and a few spare), gives back
// (re-enqueues) a job it held longer than `holdMs` (by default half the
// type's activity timeout, so the activity monitor never finds one of them
// inactive), and gives back everything it still holds on `stop()`. A job
// handed out after a long hold has its activity stamped again (as `update`
// does), so its consumer has the type timeout for its first update, as
// after `accept`.

import { JobsError } from '../errors.js';
import { acceptEmptiedQueue, acceptStartedAt } from './accept-calls.js';
import { countedFinish } from './counted-finish.js';
import type { CountedFinish, FINISH_COUNTED } from './counted-finish.js';
import { type HeldBatch, HeldBatches } from './held-batches.js';
import type { AcceptOptions, Job } from './interfaces.js';
import {
  type LocalQueueConsumer,
  type LocalQueueMode,
  type LocalQueueOptions,
  type LocalQueueSettings,
  type LocalQueueSlotOptions,
  type LocalQueueSlots,
  type LocalQueueSource,
  resolveLocalQueueOptions,
} from './local-queue-options.js';
import { SpareJobs } from './spare-jobs.js';
import { QueueWrites } from './queue-writes.js';

export { DEFAULT_LOCAL_QUEUE_SIZE } from './local-queue-options.js';
export type {
  LocalQueueConsumer,
  LocalQueueMode,
  LocalQueueOptions,
  LocalQueueSlotOptions,
  LocalQueueSlots,
  LocalQueueSource,
} from './local-queue-options.js';

/** How long a job of a type without an activity timeout may be held. */
const DEFAULT_HOLD_MS = 30_000;

/**
 * A job held longer than this share of its hold has its activity stamped
 * again when handed out. The activity monitor re-enqueues a job whose
 * stamp is at least one timeout old, checking every quarter timeout: with
 * the default hold (half the timeout), a job handed out within a sixteenth
 * of the timeout of its accept still has 15/16 to 5/4 of a timeout, as
 * after `accept`; jobs handed out at once (the busy case) cost no write.
 */
const RESTAMP_SHARE = 1 / 8;
/**
 * Accepts in flight at most: while one batch is being written to the
 * store, the next is taken, so the consumers' finishes, the next accept and
 * the storage write overlap instead of taking turns.
 */
const MAX_FILLS = 2;

interface Taker<T extends string> {
  resolve(job: Job<T> | undefined): void;
  reject(error: unknown): void;
}

export class LocalQueue<T extends string = string> {
  readonly #jobs: LocalQueueSource;
  readonly #type: T;
  readonly #settings: LocalQueueSettings;
  /** The owner whose slots take the jobs, in `slots` mode. */
  readonly #slots: LocalQueueSlots | undefined;
  /** In `slots` mode, the jobs held beyond the owner's free slots. */
  readonly #spare = new SpareJobs();
  #holdMs: number | undefined;
  /** Held longer than this, a job is stamped again as it is handed out (see RESTAMP_SHARE). */
  #restampMs = Number.POSITIVE_INFINITY;
  readonly #held = new HeldBatches<T>();
  /** Workers waiting in `take()`, first come first served. */
  readonly #takers: Taker<T>[] = [];
  /** Accepts in flight (at most {@link MAX_FILLS}), and the jobs they asked for between them. */
  readonly #filling = new Set<Promise<void>>();
  #requested = 0;
  #mode: LocalQueueMode = 'waiting';
  /** A take has answered (until then the mode says nothing of the store). */
  #answered = false;
  /** The fill scheduled for a coming turn. */
  #nextFill: NodeJS.Immediate | undefined;
  /** Wakes when the oldest held batch's hold ends. */
  #expiry: NodeJS.Timeout | undefined;
  /** In `slots` mode, takes again a while after a take failed. */
  #retry: NodeJS.Timeout | undefined;
  /** A take's round trip (ms) when it does not wait, averaged. */
  #takeMs = 2;
  /** Finishes, give-backs and stamps not settled yet: `stop()` waits for them. */
  readonly #writes = new QueueWrites();
  /** The source's finish that tells the queue when it settles (a `Jobs` handle's), if it has one. */
  readonly #countedFinish: CountedFinish[typeof FINISH_COUNTED] | undefined;
  readonly #abort = new AbortController();
  #stopping: Promise<void> | undefined;

  constructor(jobs: LocalQueueSource, type: T, options: LocalQueueOptions | LocalQueueSlotOptions = {}) {
    this.#settings = resolveLocalQueueOptions(options);
    this.#slots = this.#settings.slots;
    this.#holdMs = this.#settings.holdMs;
    this.#jobs = jobs;
    this.#type = type;
    this.#countedFinish = countedFinish(jobs);
  }

  /** Jobs taken and not yet handed out. */
  get held(): number {
    return this.#held.count;
  }

  /** What the queue is doing (see {@link LocalQueueMode}). */
  get mode(): LocalQueueMode {
    return this.#mode;
  }

  /** Who takes its jobs: `workers` with `take()`, or an owner's `slots` with `takeReady()`. */
  get consumer(): LocalQueueConsumer {
    return this.#settings.consumer;
  }

  /**
   * The next job: at once when the queue holds one, else once a batch
   * brings one. Resolves `undefined` once the queue is stopped. Rejects
   * with the accept's error when taking a batch fails (e.g. `closed`); the
   * next call tries again.
   */
  take(): Promise<Job<T> | undefined> {
    if (this.#mode === 'stopped') return Promise.resolve(undefined);
    const now = performance.now();
    const batch = this.#current(now);
    if (batch !== undefined) {
      const job = this.#held.shift(batch);
      this.#scheduleFill();
      return now - batch.takenAt <= this.#restampMs ? Promise.resolve(job) : this.#restamp(job);
    }
    return new Promise((resolve, reject) => {
      this.#takers.push({ resolve, reject });
      this.#scheduleFill();
    });
  }

  /**
   * Up to `max` held jobs at once, the oldest first, for an owner's free
   * slots (`slots` mode), and takes more from the store as room frees (an
   * owner calls it whenever slots free, even with none held). A job held longer
   * than an eighth of its hold has its activity stamped again as it leaves,
   * without waiting: from then on the owner keeps it alive. Empty once the
   * queue is stopped.
   */
  takeReady(max: number): Job<T>[] {
    const taken: Job<T>[] = [];
    if (this.#mode === 'stopped') return taken;
    if (max > 0 && this.#held.count > 0) {
      const now = performance.now();
      for (let batch = this.#current(now); batch !== undefined && taken.length < max; batch = this.#current(now)) {
        const from = taken.length;
        const stale = now - batch.takenAt > this.#restampMs;
        this.#held.shiftInto(batch, max - from, taken);
        if (stale) for (let index = from; index < taken.length; index++) this.#stampAgain(taken[index] as Job<T>);
      }
    }
    this.#spare.starved(taken.length < max && this.#storeMayHaveMore());
    this.#scheduleFill();
    return taken;
  }

  /** One of the jobs an owner took ended by itself (finished or crashed), freeing its slot: sizes the spare jobs (`slots` mode). */
  ended(): void {
    this.#spare.ended();
  }

  /**
   * Gives back the held jobs beyond what the consumers are expected to take
   * soon (in `slots` mode the spare jobs, which shrink when runs stop
   * ending quickly), the newest first.
   */
  trim(): void {
    const keep = this.#slots === undefined ? this.#settings.size : this.#spareCount();
    if (this.#held.count > keep) this.#giveBack(this.#held.trim(keep));
  }

  /** The jobs held now, oldest first, each with `takenAt`: performance.now() before the accept that took it. */
  heldJobs(): Iterable<{ readonly job: Job<T>; readonly takenAt: number }> {
    return this.#held.entries();
  }

  /**
   * `jobs.finish(job, data)`, counted by the queue so that `stop()` waits
   * for it. Concurrent finishes share transactions (the write batcher), so
   * a worker need not wait for one before taking its next job. The promise
   * is the finish's own: a rejection (`halt`) is the worker's to handle.
   */
  finish(job: Job<T>, data?: unknown): Promise<'pending' | 'finished'> {
    if (this.#countedFinish === undefined) return this.#writes.track(this.#jobs.finish(job, data));
    this.#writes.counted();
    return this.#countedFinish.call(this.#jobs, job, data, this.#writes.counter);
  }

  /**
   * Stops taking jobs: waiting `take()`s resolve `undefined`, a waiting
   * accept ends, every job still held (and any its last batch brings) is
   * given back to the store's queue, and the call resolves once those and
   * the finishes made through the queue have settled. Jobs handed out are
   * the consumers' to finish. Safe to call again.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#mode = 'stopped';
    this.#abort.abort();
    for (const taker of this.#takers.splice(0)) taker.resolve(undefined);
    clearTimeout(this.#expiry);
    clearTimeout(this.#retry);
    clearImmediate(this.#nextFill);
    this.#expiry = this.#retry = this.#nextFill = undefined;
    this.#giveBack(this.#held.drain());
    while (this.#filling.size > 0) await Promise.all(this.#filling);
    await this.#writes.settled();
  }

  /** The oldest held batch whose jobs are not past their hold at `now`; the expired ones are given back. */
  #current(now: number): HeldBatch<T> | undefined {
    return this.#held.current(now, this.#giveBack);
  }

  /**
   * A held job for a worker after an `update` that stamps its activity
   * again (it was taken a while ago). A job that is no longer ours (`halt`:
   * re-enqueued or removed meanwhile) is skipped for the next one.
   */
  #restamp(job: Job<T>): Promise<Job<T> | undefined> {
    return this.#writes.track(this.#jobs.update(job)).catch((error: unknown) => {
      if (JobsError.is(error, 'halt')) return this.take();
      throw error;
    });
  }

  /**
   * Stamps the activity of a job an owner took. A failure is the owner's to
   * find (its own heartbeats and finish meet a job that is no longer ours).
   */
  #stampAgain(job: Job<T>): void {
    this.#writes.track(this.#jobs.update(job)).catch(() => {});
  }

  /**
   * Starts a fill on the next turn, so that the consumers first take what
   * the queue holds and the accept then asks for what is missing.
   */
  #scheduleFill(): void {
    if (this.#nextFill !== undefined || this.#filling.size >= MAX_FILLS || this.#mode === 'stopped' || !this.#wantsMore()) return;
    this.#nextFill = setImmediate(this.#startFills);
  }

  /**
   * Starts one accept, and schedules the next one (if there is room for it)
   * two turns later: the storage engine writes what commits in one event
   * turn as one write, so two accepts started together would commit in the
   * same write and take turns with the consumers just as one accept of
   * their size would. Started later, the second reads and commits while the
   * first's write is under way.
   */
  readonly #startFills = (): void => {
    this.#nextFill = undefined;
    if (this.#filling.size >= MAX_FILLS || this.#mode === 'stopped' || !this.#wantsMore()) return;
    const count = Math.min(this.#chunk, this.#room());
    this.#requested += count;
    const fill: Promise<void> = this.#fill(count).then((answered) => {
      this.#requested -= count;
      this.#filling.delete(fill);
      // For consumers still waiting, or room left while the store has jobs:
      // a fill that found the store's queue empty is not repeated until a
      // consumer asks again, nor one that failed (see #failed).
      if (answered && (this.#someoneWaits() || this.#mode === 'taking')) this.#scheduleFill();
    });
    this.#filling.add(fill);
    if (this.#filling.size < MAX_FILLS && this.#mode === 'taking' && this.#wantsMore()) {
      this.#nextFill = setImmediate(this.#startFillsLater);
    }
  };

  readonly #startFillsLater = (): void => {
    this.#nextFill = setImmediate(this.#startFills);
  };

  /** Whether the store may have more jobs than the last take brought: it was full, or none has answered yet. */
  #storeMayHaveMore(): boolean {
    return this.#mode === 'taking' || !this.#answered;
  }

  /** Jobs one accept asks for at most: for workers half the queue, so that two accepts can be in flight. */
  get #chunk(): number {
    return this.#slots === undefined ? Math.max(1, Math.ceil(this.#settings.size / MAX_FILLS)) : this.#settings.size;
  }

  /** The spare jobs to hold beyond an owner's free slots (`slots` mode). */
  #spareCount(): number {
    return this.#spare.count(this.#takeMs, this.#jobs.role === 'owner');
  }

  /** Jobs the queue's consumers want held: for workers its size, for an owner its free slots and the spare jobs. */
  #wanted(): number {
    return this.#slots === undefined ? this.#settings.size : this.#slots.free() + this.#spareCount();
  }

  /** Jobs the queue may still take: what its consumers want held, less what it holds and has asked for. */
  #room(): number {
    return this.#wanted() - this.#held.count - this.#requested;
  }

  /** Workers wait in `take()`, or the owner has slots free. */
  #someoneWaits(): boolean {
    return this.#takers.length > 0 || (this.#slots !== undefined && this.#slots.free() > 0);
  }

  /**
   * Whether to take more: there is room, and either someone waits and no
   * accept is in flight for them, or (while the store has jobs) the room
   * is worth an accept of its own: for workers a chunk (a batch is taken
   * once no more than half the queue is left), for an owner's slots a
   * quarter of what it wants held (an accept of one job while a large one
   * is in flight would cost a transaction and a commit for that job alone).
   */
  #wantsMore(): boolean {
    const wanted = this.#wanted();
    const room = wanted - this.#held.count - this.#requested;
    if (room <= 0) return false;
    if (this.#requested === 0 && this.#someoneWaits()) return true;
    if (this.#mode === 'waiting' && this.#requested > 0) return false;
    return room >= (this.#slots === undefined ? this.#chunk : Math.ceil(wanted / 4));
  }

  /** One accept of up to `count` jobs. Resolves false when it failed. */
  async #fill(count: number): Promise<boolean> {
    try {
      const holdMs = await this.#holdLimit();
      if (this.#mode === 'stopped') return true;
      // Expiry is counted from before the transaction that made the jobs
      // running (before the call when the source does not say, e.g. across
      // threads): a job is never held longer than holdMs after the store
      // made it running. A waiting accept waits at most half the hold by
      // default (then the next fill asks again), so a batch that arrives
      // after a long wait still has at least half its hold left.
      const wait = this.#mode === 'waiting' && this.#someoneWaits() ? this.#waitMs() : 0;
      const askedAt = performance.now();
      const taken = await this.#jobs.acceptMany(this.#type, count, this.#acceptOptions(wait));
      if (wait === 0) this.#takeMs = (this.#takeMs + performance.now() - askedAt) / 2;
      const takenAt = acceptStartedAt(taken) ?? askedAt;
      // A stop may have come while the accept ran.
      if (this.mode === 'stopped') {
        this.#giveBack(taken);
        return true;
      }
      // A full take that emptied the queue (an idle queue's job, handed over
      // by its add) is no sign of more: looking at once would cost every
      // such job a take that finds nothing. The next take looks before it
      // waits, so jobs that did come meanwhile are found at once anyway.
      this.#mode = taken.length < count || acceptEmptiedQueue(taken) ? 'waiting' : 'taking';
      this.#answered = true;
      this.#deliver(taken, takenAt, takenAt + holdMs);
      return true;
    } catch (error) {
      if (this.#mode !== 'stopped') this.#failed(error);
      return false;
    }
  }

  #acceptOptions(timeout: number): AcceptOptions {
    const maxSchedTime = this.#slots?.maxSchedTime?.();
    if (maxSchedTime !== undefined) return { timeout, maxSchedTime, signal: this.#abort.signal };
    return { timeout, noSchedule: this.#settings.noSchedule, signal: this.#abort.signal };
  }

  /**
   * A failed take counts as one that found nothing, and the queue does not
   * take again at once on its own (a closed handle or failing storage would
   * make it spin): waiting workers get the error, and the next `take()`
   * tries again; an owner hears of it, and the queue tries again on its
   * next `takeReady()`, or after `waitMs` while its slots are free.
   */
  #failed(error: unknown): void {
    this.#mode = 'waiting';
    for (const taker of this.#takers.splice(0)) taker.reject(error);
    if (this.#slots === undefined) return;
    this.#slots.failed(error);
    if (this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#scheduleFill();
    }, this.#waitMs());
    this.#retry.unref();
  }

  /** The hold limit: the option, or half the type's timeout read once. */
  async #holdLimit(): Promise<number> {
    if (this.#holdMs === undefined) {
      const seconds = await this.#jobs.getTypeTimeout(this.#type);
      this.#holdMs = seconds === undefined ? DEFAULT_HOLD_MS : (seconds * 1000) / 2;
    }
    this.#restampMs = this.#holdMs * RESTAMP_SHARE;
    return this.#holdMs;
  }

  /** How long a take waits for a job when the store has none due. */
  #waitMs(): number {
    return this.#settings.waitMs ?? (this.#holdMs ?? DEFAULT_HOLD_MS) / 2;
  }

  /**
   * Hands new jobs to waiting workers, or offers them to an owner of slots,
   * and holds the rest. A batch whose accept took longer than the hold (a
   * slow commit) is given back whole: a job past its hold is never handed
   * out.
   */
  #deliver(taken: readonly Job<T>[], takenAt: number, expires: number): void {
    if (taken.length === 0) return;
    const now = performance.now();
    if (now >= expires) {
      this.#giveBack(taken);
      return;
    }
    let index = 0;
    // Handed out as they arrive (the busy case: every worker waits): no
    // promise per job unless the job needs stamping first.
    const fresh = now - takenAt <= this.#restampMs;
    while (index < taken.length && this.#takers.length > 0) {
      const taker = this.#takers.shift() as Taker<T>;
      const job = taken[index++] as Job<T>;
      if (fresh) taker.resolve(job);
      else this.#restamp(job).then(taker.resolve, taker.reject);
    }
    // Jobs held from before go first: the owner takes them as its slots free up.
    if (this.#slots !== undefined && index < taken.length && this.#held.count === 0) {
      const offered = index === 0 ? taken : taken.slice(index);
      const started = Math.min(offered.length, this.#slots.offer(offered));
      if (!fresh) for (let i = 0; i < started; i++) this.#stampAgain(offered[i] as Job<T>);
      index += started;
    }
    if (index < taken.length) {
      this.#held.push(taken, index, takenAt, expires);
      this.#armExpiry();
    }
    if (this.#slots !== undefined) this.#spare.starved(this.#storeMayHaveMore() && this.#held.count === 0 && this.#slots.free() > 0);
  }

  /** Wakes when the oldest held job's hold ends, to give back what nobody took in time. */
  #armExpiry(): void {
    if (this.#expiry !== undefined || this.#mode === 'stopped') return;
    const oldest = this.#held.oldest;
    if (oldest === undefined) return;
    this.#expiry = setTimeout(
      () => {
        this.#expiry = undefined;
        // #current gives back every batch past its hold.
        this.#current(performance.now());
        this.#armExpiry();
        // Jobs that nobody took within their hold show there is no demand:
        // the queue takes more on the next take, not now (it would take
        // back what it gives back here, once the give-back commits).
        if (this.#takers.length > 0) this.#scheduleFill();
      },
      Math.max(0, oldest.expires - performance.now()),
    );
    // A held job does not keep the process alive: were it to exit, the
    // activity monitor re-enqueues the job after its timeout.
    this.#expiry.unref();
  }

  /**
   * Re-enqueues jobs the queue took but nobody started: each is flagged to
   * run again and finished, which makes it pending with its data, priority
   * and scheduled time unchanged. A job that is no longer ours (`halt`:
   * re-enqueued or removed meanwhile) needs nothing; on any other failure
   * the job stays running until the activity monitor re-enqueues it.
   */
  readonly #giveBack = (taken: readonly Job<T>[]): void => {
    if (taken.length === 0) return;
    const jobs = this.#jobs;
    void this.#writes.track(
      (async () => {
        const flagged = await Promise.allSettled(taken.map((job) => jobs.resubmit(job)));
        const items = flagged.flatMap((outcome) => (outcome.status === 'fulfilled' ? [{ job: outcome.value }] : []));
        if (items.length > 0) await jobs.finishMany(items);
      })(),
    ).catch(() => {});
  };
}
