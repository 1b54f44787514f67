// Accepts of this process that found no due job and wait for one (parked),
// and the hand-over that serves them from the write that enqueues their job.
//
// Without it, an add that an idle worker waits for costs two durable commits
// in a row: the add's, then, once the worker's watch fired, its accept's. A
// write batch that enqueues a job of a type with a parked accept instead
// runs that accept's body (`acceptJobs`, with the accept's own schedule
// bound and count) in the same transaction before it commits, so the job
// goes pending -> running in one commit. `acceptJobs` reads the queue
// inside the transaction: it sees the new job and every older or better one,
// so the waiter gets what an accept of its own would have got, in the same
// order, picked at random among the front the same way.
//
// A write that ends the run of a grouped job of a type whose groups have a
// concurrency limit serves the type's parked accepts the same way: the slot
// it freed may be all its group's backlog waits for, and a group held to
// one job at a time then runs a job per commit, not a job per two commits
// with a watch's wake-up between them.
//
// A claimed accept belongs to the attempt that claimed it until that
// attempt's outcome is known: it cannot time out or be cancelled meanwhile,
// as an accept whose own transaction is running cannot. A commit hands it
// its jobs; an attempt that fails or is retried gives it back, in its place
// in the line, to be claimed again (by the retry, say) or to wait on. Its
// watch stays armed throughout: it is what serves the accept whenever no
// hand-over happens (a job enqueued by another process, by an application's
// own transaction, by the activity monitor).

import { FdbError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { BatchClaims } from './accept-batcher.js';
import type { Job } from './interfaces.js';
import type { TypeKeys } from './job-keys.js';
import type { JobsClock } from './jobs-clock.js';
import { ACCEPT_BYTES_BUDGET, acceptJobs } from './job-transitions.js';
import type { OncePerAttempt } from './pending-queue.js';
import { readTypeLimits } from './type-limits.js';

/** What an accept may take: up to a fixed `maxSchedTime`, any time (`noSchedule`), or (`undefined`) what is due now. */
export type ScheduleBound = number | 'any' | undefined;

/**
 * Jobs one write attempt hands over at most, over all the accepts it
 * serves: with the batch's own calls, user versions stay unique and the
 * transaction stays far from the storage limits.
 */
const MAX_HANDED_JOBS = 1_000;

type ParkedState = 'parked' | 'claimed' | 'served' | 'left';

/** Told of the jobs writes hand to a parked accept (see whenHandedOver). */
export interface HandedListener {
  /**
   * A write took `jobs` for the accept and its commit is under way: they
   * are the accept's only once `handed` tells so with this very array,
   * which it never does when the write fails or is retried. Told at most
   * once per write, and not at all when the commit is readable first.
   */
  taking?(jobs: Job[], tookAllBrought: boolean): void;
  /** The jobs are the accept's: the write's commit is readable. */
  handed(jobs: Job[], tookAllBrought: boolean): void;
}

const handedListeners = new WeakMap<AbortSignal, HandedListener>();

/**
 * Tells `listener` of the jobs a write hands to an accept whose signal is
 * `signal`, the moment they are its (the write's commit is readable),
 * before the accept itself resolves with them, some turns of the microtask
 * queue later. The owner of a shared store sends a client's waiting accept
 * its jobs from here (served-jobs-calls.ts): for an idle worker in another
 * process, those turns are on the way from an add to its handler. The
 * accept still resolves with the same jobs.
 */
export function whenHandedOver(signal: AbortSignal, listener: HandedListener): void {
  handedListeners.set(signal, listener);
}

/**
 * A parked accept's body failed inside a write's transaction for a reason of
 * its own, not the storage's (a job record that does not decode): the write
 * batch runs its calls again without serving accepts, so the failure reaches
 * the accepts (through their own transaction, once their watch fires) and
 * not the writes. Internal: it never leaves the jobs layer.
 */
export class HandoverFailure extends Error {
  override readonly name = 'HandoverFailure';
}

/** One parked accept: an `accept` or `acceptMany` waiting on its watch. */
export class ParkedAccept {
  readonly keys: TypeKeys;
  readonly bound: ScheduleBound;
  readonly count: number;
  /**
   * Resolves once jobs were handed to it, or once a claim was given back
   * after its wait ended (then it has none): the wait races this.
   */
  readonly settled: Promise<void>;
  readonly #registry: ParkedAccepts;
  readonly #signal: AbortSignal | undefined;
  /** `performance.now()` at which the accept's timeout passes. */
  readonly #deadline: number;
  #state: ParkedState = 'parked';
  /** Its wait ended while it was claimed: a claim given back ends it. */
  #leaving = false;
  #jobs: Job[] | undefined;
  #tookAllBrought = false;
  #settle!: () => void;
  #claimedAt = 0;

  constructor(
    registry: ParkedAccepts,
    keys: TypeKeys,
    bound: ScheduleBound,
    count: number,
    signal: AbortSignal | undefined,
    deadline: number,
  ) {
    this.#registry = registry;
    this.keys = keys;
    this.bound = bound;
    this.count = count;
    this.#signal = signal;
    this.#deadline = deadline;
    this.settled = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  /**
   * Whether an attempt may claim it at `now` (`performance.now()`): still
   * parked, its signal not aborted, its timeout not passed (whether or not
   * its timer has run yet), its handle open.
   */
  claimable(now: number): boolean {
    return this.#state === 'parked' && this.#signal?.aborted !== true && now < this.#deadline && !this.#registry.closed;
  }

  claim(): void {
    this.#state = 'claimed';
    this.#claimedAt = performance.now();
  }

  /** When (`performance.now()`) the attempt that served it claimed it: its jobs went running after that. */
  get claimedAt(): number {
    return this.#claimedAt;
  }

  /** Whether a listener hears of the jobs it is being handed before they are its (see HandedListener.taking). */
  get heardEarly(): boolean {
    return this.#signal !== undefined && handedListeners.get(this.#signal)?.taking !== undefined;
  }

  /** The attempt that claimed it is committing `jobs` for it (see HandedListener.taking). */
  taking(jobs: Job[], tookAllBrought: boolean): void {
    if (this.#state === 'claimed' && this.#signal !== undefined) handedListeners.get(this.#signal)?.taking?.(jobs, tookAllBrought);
  }

  /** The attempt that claimed it hands it nothing (it failed, is retried, or found no job for it). */
  release(): void {
    if (this.#state !== 'claimed') return;
    if (this.#leaving) {
      this.#state = 'left';
      this.#registry.remove(this);
      this.#settle();
    } else {
      this.#state = 'parked';
    }
  }

  /**
   * The attempt that claimed it committed: `jobs` are running, under locks
   * only this accept knows. `tookAllBrought`: with them, every job the
   * attempt enqueued to the type was taken.
   */
  serve(jobs: Job[], tookAllBrought: boolean): void {
    this.#state = 'served';
    this.#jobs = jobs;
    this.#tookAllBrought = tookAllBrought;
    this.#registry.remove(this);
    this.#settle();
    if (this.#signal !== undefined) handedListeners.get(this.#signal)?.handed(jobs, tookAllBrought);
  }

  /**
   * Whether the write that served it left none of the jobs it enqueued to
   * the type in the queue. The accept had found no due job before it
   * parked, so the queue is then as empty as it found it, but for other
   * writes' jobs (which fire its watch, or are served by their own write).
   */
  get tookAllBrought(): boolean {
    return this.#tookAllBrought;
  }

  /** The jobs handed over to it, once it was served; its wait then needs no `leave()`. */
  get handed(): Job[] | undefined {
    return this.#state === 'served' ? this.#jobs : undefined;
  }

  /**
   * Its wait ended (its watch, a timer, its signal, close, or `settled`):
   * resolves with the jobs handed over to it, or `undefined` when none were.
   * A claimed accept learns its attempt's outcome first.
   */
  async leave(): Promise<Job[] | undefined> {
    if (this.#state === 'parked') {
      this.#state = 'left';
      this.#registry.remove(this);
      return undefined;
    }
    if (this.#state === 'claimed') {
      this.#leaving = true;
      await this.settled;
    }
    return this.#jobs;
  }
}

/** The parked accepts of one `Jobs` handle, by type, oldest first. */
export class ParkedAccepts {
  readonly #byType = new Map<string, ParkedAccept[]>();
  /** The handle's clock, which rate limits count on. */
  readonly clock: JobsClock;
  /** Queue entries picked by hand-overs whose transaction has not settled (see claimKey in pending-queue.ts). */
  readonly #claimed = new Set<number>();
  #closed = false;

  constructor(clock: JobsClock) {
    this.clock = clock;
  }

  /** Whether the handle closed: no accept is claimed from then on. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Parks an accept that waits until `deadline` (`performance.now()`); it must `leave()` when its wait ends. */
  park(keys: TypeKeys, bound: ScheduleBound, count: number, signal: AbortSignal | undefined, deadline: number): ParkedAccept {
    const accept = new ParkedAccept(this, keys, bound, count, signal, deadline);
    const line = this.#byType.get(keys.type);
    if (line === undefined) this.#byType.set(keys.type, [accept]);
    else line.push(accept);
    return accept;
  }

  remove(accept: ParkedAccept): void {
    const line = this.#byType.get(accept.keys.type);
    if (line === undefined) return;
    const index = line.indexOf(accept);
    if (index >= 0) line.splice(index, 1);
    if (line.length === 0) this.#byType.delete(accept.keys.type);
  }

  close(): void {
    this.#closed = true;
  }

  /** The accepts parked on `type`, oldest first. */
  line(type: string): readonly ParkedAccept[] | undefined {
    return this.#byType.get(type);
  }

  /**
   * The hand-over of one write batch, for each attempt of its transaction in
   * turn; none while no accept is parked (an accept that parks while the
   * batch runs read before its commit: its watch serves it).
   */
  handover(): Handover | undefined {
    return this.#byType.size === 0 ? undefined : new Handover(this, this.#claimed);
  }
}

interface Handed {
  accept: ParkedAccept;
  jobs: Job[];
  /** See ParkedAccept.tookAllBrought. */
  tookAllBrought: boolean;
}

/**
 * What one attempt enqueued to a type: how many jobs, scheduled from
 * `earliest` to `latest`; and how many slots of its groups it freed.
 */
interface Brought {
  count: number;
  earliest: number;
  latest: number;
  freedSlots: number;
}

function serveAll(handed: readonly Handed[]): void {
  for (const { accept, jobs, tookAllBrought } of handed) accept.serve(jobs, tookAllBrought);
}

/**
 * Tells the accepts of `handed` what they are being handed, in the event
 * loop's next turn (see Handover.serveWhenVisible), unless the attempt
 * that took their jobs ended first.
 */
function tellTakingNextTurn(handover: Handover, handed: readonly Handed[]): void {
  setImmediate(tellTaking, handover, handed);
}

function tellTaking(handover: Handover, handed: readonly Handed[]): void {
  if (!handover.stillHanding(handed)) return;
  for (const { accept, jobs, tookAllBrought } of handed) accept.taking(jobs, tookAllBrought);
}

/**
 * What one write batch hands over. `begin()` starts each attempt (giving
 * back what the previous attempt claimed), `enqueued` hears of each job it
 * enqueues, `serve` runs the parked accepts' bodies after the batch's own
 * calls, and `committed()` or `failed()` ends the batch.
 */
export class Handover {
  readonly #registry: ParkedAccepts;
  readonly #claims: BatchClaims;
  /** The types this attempt enqueued to, and what it enqueued there. */
  #enqueued: Map<TypeKeys, Brought> | undefined;
  #handed: Handed[] = [];

  constructor(registry: ParkedAccepts, claimed: Set<number>) {
    this.#registry = registry;
    this.#claims = new BatchClaims(claimed);
  }

  /** A new attempt: the previous one's claims are given back, and it decides again. */
  begin(): void {
    this.#giveBack();
    this.#enqueued = undefined;
  }

  /**
   * Only types with an accept parked now are recorded (a Map lookup per job
   * otherwise): an accept that parks later read before this commit, so its
   * watch fires for it.
   */
  enqueued(keys: TypeKeys, scheduledTime: number): void {
    if (this.#registry.line(keys.type) === undefined) return;
    if (this.#enqueued === undefined) this.#enqueued = new Map();
    const brought = this.#enqueued.get(keys);
    if (brought === undefined) {
      this.#enqueued.set(keys, { count: 1, earliest: scheduledTime, latest: scheduledTime, freedSlots: 0 });
    } else {
      brought.count += 1;
      if (scheduledTime < brought.earliest) brought.earliest = scheduledTime;
      if (scheduledTime > brought.latest) brought.latest = scheduledTime;
    }
  }

  /**
   * A run of a grouped job of `keys`' type ended in this attempt. Under a
   * limit on each group's concurrency, a group with a backlog starts its
   * next job only once one ends: served here, the next start shares the
   * finish's commit rather than following it with one of its own (after a
   * watch woke the accept), which halves the commits of each such job.
   */
  freedGroupSlot(keys: TypeKeys): void {
    if (this.#registry.line(keys.type) === undefined) return;
    if (this.#enqueued === undefined) this.#enqueued = new Map();
    const brought = this.#enqueued.get(keys);
    if (brought === undefined) this.#enqueued.set(keys, { count: 0, earliest: Number.POSITIVE_INFINITY, latest: Number.NEGATIVE_INFINITY, freedSlots: 1 });
    else brought.freedSlots += 1;
  }

  /**
   * Serves, oldest first, the accepts parked on the types this attempt
   * enqueued to that one of its jobs is due for: each takes what its own
   * accept would take, now, in `tx`. `userVersion`: the first user version
   * the batch's own calls left free.
   *
   * A parked accept found nothing under its bound when it read; jobs
   * enqueued since by other commits fire its watch. So the jobs worth a read
   * of the queue here are the ones this attempt brought: serving stops once
   * as many jobs were taken as it enqueued, or once an accept came up short
   * under a bound that covers all of them. Many parked accepts cost a write
   * a read per job it enqueued, not a read per accept.
   */
  async serve(tx: Transaction, userVersion: number, once: OncePerAttempt): Promise<void> {
    const enqueued = this.#enqueued;
    if (enqueued === undefined) return;
    let handed = 0;
    let bytes = 0;
    for (const [keys, brought] of enqueued) {
      const line = this.#registry.line(keys.type);
      if (line === undefined) continue;
      const now = Date.now() / 1000;
      let left = brought.count;
      if (brought.freedSlots > 0) {
        // A freed slot may let any due job of the type start, of any group:
        // worth a take only where the type limits each group's concurrency.
        const limits = await readTypeLimits(tx, keys);
        if (limits?.group?.concurrency !== undefined) {
          left += brought.freedSlots;
          brought.earliest = Number.NEGATIVE_INFINITY;
          brought.latest = Number.POSITIVE_INFINITY;
        }
      }
      /** No job due by this time is left in the queue (as this attempt sees it). */
      let emptyUpTo = Number.NEGATIVE_INFINITY;
      // A copy: an accept whose wait ends meanwhile leaves the line.
      for (const accept of [...line]) {
        if (left <= 0 || emptyUpTo >= brought.latest) break;
        if (handed >= MAX_HANDED_JOBS || bytes >= ACCEPT_BYTES_BUDGET) return;
        if (!accept.claimable(performance.now())) continue;
        const maxScheduledTime = accept.bound === 'any' ? undefined : (accept.bound ?? now);
        const reach = maxScheduledTime ?? Number.POSITIVE_INFINITY;
        // None of this attempt's jobs is due for it, or none is left that is:
        // its watch serves it, as before.
        if (brought.earliest > reach || reach <= emptyUpTo) continue;
        // Claimed before the read: from here its outcome is this attempt's
        // (should the read fail, the attempt's end gives it back).
        accept.claim();
        const entry: Handed = { accept, jobs: [], tookAllBrought: false };
        this.#handed.push(entry);
        const asked = Math.min(accept.count, MAX_HANDED_JOBS - handed);
        let batch: Awaited<ReturnType<typeof acceptJobs>>;
        try {
          batch = await acceptJobs(tx, keys, maxScheduledTime, asked, 0, this.#registry.clock.now(), this.#claims, {
            userVersionBase: userVersion + handed,
            once,
            bytesBudget: ACCEPT_BYTES_BUDGET - bytes,
          });
        } catch (error) {
          if (error instanceof FdbError) throw error;
          throw new HandoverFailure('a parked accept failed in a write transaction', { cause: error });
        }
        entry.jobs = batch.jobs;
        if (batch.jobs.length === 0) {
          this.#handed.splice(this.#handed.indexOf(entry), 1);
          accept.release();
        }
        handed += batch.jobs.length;
        bytes += batch.bytes;
        left -= batch.jobs.length;
        // Jobs a freed group slot let start were in the queue before: more of them may be.
        entry.tookAllBrought = left <= 0 && brought.freedSlots === 0;
        if (batch.truncated) return;
        if (batch.jobs.length < asked && !batch.skippedClaims) emptyUpTo = Math.max(emptyUpTo, reach);
      }
    }
  }

  /**
   * The accepts this attempt served get their jobs as soon as its commit is
   * readable, which the embedded store with the default durability tells
   * before the commit is durable (lmdb has written it and syncs it next):
   * a take need not be durable to be safe (see docs/durability.md). The
   * batch's own calls still answer once it is durable.
   */
  serveWhenVisible(tx: Transaction): void {
    const handed = this.#handed;
    if (handed.length === 0 || tx.onVisible === undefined) return;
    // An arrow made here, only for a write that handed something over: as a
    // field, tsx would name it with a call per write batch (esbuild's keepNames).
    tx.onVisible(() => this.#visible());
    // Listeners that prepare something for the jobs (a client's answer,
    // encoded) do it while the storage commits, rather than between its
    // commit becoming readable and the jobs leaving. Not in this turn: the
    // embedded store's write commits once the turn has ended (lmdb-js ends
    // it in an immediate queued as the commit starts, after this one), and
    // work added to the turn would delay it. The immediate queued from this
    // one's runs in the event loop's next turn, once the write has started,
    // and after the commit's notice if that came first.
    // Module functions, no closure: tsx names every function it sees bound to a name, with a call each time.
    for (const { accept } of handed) {
      if (!accept.heardEarly) continue;
      setImmediate(tellTakingNextTurn, this, handed);
      return;
    }
  }

  /** Whether `handed` is what this attempt hands over still: its commit is neither readable nor failed yet. */
  stillHanding(handed: readonly Handed[]): boolean {
    return this.#handed === handed;
  }

  /**
   * The commit is readable, its batch's calls not answered yet: nothing
   * orders the accepts after them, so they get their jobs now rather than a
   * tick later, after whatever else the store's callback queued.
   */
  #visible(): void {
    const handed = this.#handed;
    this.#claims.release();
    if (handed.length === 0) return;
    this.#handed = [];
    serveAll(handed);
  }

  /**
   * The batch committed: the accepts it served and that were not told
   * earlier that the commit is readable (see `serveWhenVisible`) get their
   * jobs, on the next tick (after every promise callback already queued,
   * before any I/O): once the callers of the batch's own calls have resumed.
   */
  committed(): void {
    const handed = this.#handed;
    this.#claims.release();
    if (handed.length === 0) return;
    this.#handed = [];
    process.nextTick(serveAll, handed);
  }

  /** The batch failed: its accepts go back to waiting. */
  failed(): void {
    this.#giveBack();
  }

  #giveBack(): void {
    const handed = this.#handed;
    this.#claims.release();
    if (handed.length === 0) return;
    this.#handed = [];
    for (const { accept } of handed) accept.release();
  }
}
