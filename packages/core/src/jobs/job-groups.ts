// Groups of one job type (a job's `group` option, a tenant say), with limits
// per group and fair turns across groups, kept in the store like the type's
// own limits (type-limits.ts) so that they hold across every process and
// node of one store.
//
// A grouped job waits in its group's own pending queue, not in the type's
// (keys in group-keys.ts). Groups with jobs waiting take turns: a ring of
// (turn, group) rows, the lowest turn first. A take serves the groups in
// ring order, one job per group and pass, and moves each group it served to
// the back of the ring (a fresh turn from `next_turn`); a group whose queue
// it found empty leaves the ring. A group held by its limits is passed over
// and keeps its place. So a group that joins the ring behind G others starts
// its first job within the next G + 1 jobs the turns hand out, however long
// the others' queues are.
//
// An enqueue reads nothing (every path that enqueues, a finish among them,
// is a blind write): it writes the job's entry and an arrival row for its
// group. The next take gives each arrived group without a turn a turn at the
// back, in the order of their names, and clears the arrivals it read with a
// read conflict on each, so an arrival written meanwhile makes it run again.
// Jobs of the type without a group take their turns as one more group, under
// the empty name, served from the type's own queue.
//
// Counters: every take of a grouped job adds one to its group's running
// counter and every end of its run subtracts one, in the same transaction as
// the change of state (the activity monitor's re-enqueue of a crashed
// process's jobs included), whether or not limits are set, so they are right
// the moment limits are set. A take reads a counter only when the type has
// group limits, and as a snapshot read: every finish changes it, and a
// finish only frees slots, so a take that conflicted with finishes would
// run again for nothing. Takes that take jobs of a group under its
// concurrency read and write its takes key instead (group-keys.ts), which
// only takes touch: of two takes that both read the group's last free
// slot, the second to commit runs again and finds it full. A take that
// takes nothing from a group conflicts on nothing of it, and waits for a
// finish on its watch, which the transaction that saw the group full arms:
// on the type's count of ended grouped runs (group-keys.ts), which a
// commit that frees a group's slot adds to and nothing subtracts from. A watch reads its key with a
// read conflict, as FoundationDB's does, so a take that made jobs running
// and leaves accepts waiting runs again when a run ended between its read
// and its commit. The group's rate log (rate-log.ts), which only takes
// write, is read with a read conflict.
//
// Takes in flight at once in one process (the accept batcher pipelines
// them) pass over the ring rows, arrivals and queue entries the others
// took, as they pass over each other's picks in the type's queue
// (pending-queue.ts), so they serve different groups; only once every
// other group gave what it could does a take borrow jobs from the queues
// of groups those takes serve, leaving their rows to them. The G + 1 bound
// is exact for one take at a time; with takes in flight, a group may start
// more than one job a turn by the borrowing of takes with nothing else to
// start. Takes in different processes or nodes that serve one group
// conflict on its ring row, and one runs again.
//
// A type whose jobs never had a group pays one snapshot read per take for
// all this: the marker row a grouped enqueue writes. A group's rate is
// counted on the clock of the handle that runs the take, as the type's is.
//
// Over 500 lines because the ring, the arrivals, the claims of takes in
// flight and the counters are one mechanism: each part's rules are stated
// against the others', and split apart they would be read only together.

import { JobsError } from '../errors.js';
import { keyAfterPrefix } from '../keys/subspace.js';
import { readsAtOnce } from '../storage/fast-paths.js';
import type { ReadTransaction, Transaction, Watch } from '../storage/interfaces.js';
import { UNGROUPED } from './group-keys.js';
import type { TypeGroupKeys } from './group-keys.js';
import { eitherWatch } from './either-watch.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { parsePendingKeyFast } from './job-keys.js';
import { claimKey, dequeuePending } from './pending-queue.js';
import { RateLog } from './rate-log.js';
import type { DequeuedJob, DequeueResult, OncePerAttempt, PendingClaims } from './pending-queue.js';

/** The most UTF-8 bytes a group's name may have. */
export const MAX_GROUP_BYTES = 256;

/** A UTF-16 surrogate without its pair: UTF-8 cannot encode it, so two groups would share a queue. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Limits that hold for each group of a type on its own. */
export interface GroupLimits {
  /** At most this many jobs of one group running at once. */
  concurrency?: number;
  /** At most `max` starts of one group in any window of `perMs` milliseconds. */
  rate?: { max: number; perMs: number };
}

/** Arrived groups a take gives turns to at most; the rest wait for the next take. */
const ARRIVALS_PER_TAKE = 1_000;
/** Ring rows a take reads at most: groups further back wait for the next take. */
const TURNS_PER_TAKE = 1_000;
/** Entries of a group's queue a take reads at a time. */
const GROUP_PAGE = 8;

/** Ring rows a take reads beyond the jobs it wants: room for groups held by their limits. */
const RING_SLACK = 32;

const EMPTY = Buffer.alloc(0);
const ZERO = Buffer.of(0);

/** Checks a job's `group` option: `undefined` (none) or a non-empty string of at most 256 UTF-8 bytes. */
export function checkGroup(group: unknown): string | undefined {
  if (group === undefined) return undefined;
  if (typeof group !== 'string' || group.length === 0 || Buffer.byteLength(group, 'utf8') > MAX_GROUP_BYTES || LONE_SURROGATE.test(group)) {
    throw new JobsError('invalid_group', `a group is a non-empty string of at most ${MAX_GROUP_BYTES} UTF-8 bytes, got ${describe(group)}`);
  }
  return group;
}


/** Whether the type's takes go by turns: it has had grouped jobs. A snapshot read, at once on the embedded engine. */
export function hasGroupsIn(tx: Transaction, keys: TypeKeys): boolean | Promise<boolean> {
  const fast = readsAtOnce(tx, 'snapshot');
  if (fast !== undefined) return fast.readNow(keys.groups.marker, false) !== undefined;
  return tx
    .snapshot()
    .get(keys.groups.marker)
    .then((value) => value !== undefined);
}

/** One group in a take: where it stands in the ring, what it has left and what it may take. */
interface GroupTurn {
  group: string;
  /** Its turn when the take began; `undefined` for a group given one by this take. */
  turn: number | undefined;
  /** Entries of its queue read and not yet picked nor passed over. */
  entries: Buffer[];
  /** Where the next page of its queue starts; `undefined` once a page reached its end. */
  next: Buffer | undefined;
  /** Jobs picked from it in this take, of those the ones out of the queue now, and of those the ones made running. */
  picked: number;
  consumed: number;
  taken: number;
  /** Slots and starts it has under its limits, read when it first comes up (`undefined`: not yet). */
  free: number | undefined;
  log: RateLog | undefined;
  /** The earliest scheduled time of its jobs not due yet, when it was left with only those. */
  notDueUntil: number | undefined;
  /** Its queue was read to its end and has nothing left. */
  empty: boolean;
  /**
   * Entries of its queue were passed over for takes in flight: should one
   * of those not commit, the entry stays, so the group keeps a turn.
   */
  passedClaims: boolean;
}

/**
 * The turns of one take (see the top of this file): `pick` hands out up to
 * `n` jobs in turn order, `taken` counts those the take made running, and
 * `settle` writes the ring and the counters. Reads go through the take's
 * transaction, so a retry of it starts over with a new GroupTurns.
 */
export class GroupTurns {
  readonly #tx: Transaction;
  readonly #keys: TypeKeys;
  readonly #groupKeys: TypeGroupKeys;
  readonly #limits: GroupLimits | undefined;
  readonly #now: number;
  readonly #claims: PendingClaims | undefined;
  /** The write attempt's shared writes, when a write serves a parked accept: told of the runs the take starts. */
  readonly #once: OncePerAttempt | undefined;
  /** Groups in ring order, as far as the ring is read, then the groups this take gave a turn. */
  readonly #order: GroupTurn[] = [];
  /** Groups this take gives a turn, served after every group already in the ring. */
  #arrived: GroupTurn[] = [];
  #arrivedServed = false;
  /** Where the next page of the ring starts; `undefined` once it is read to its end. */
  #ringNext: Buffer | undefined;
  #nextTurn = 0;
  #loaded = false;
  /** Entries were passed over for takes in flight: their commits, not a watch, decide what is left. */
  #skippedClaims = false;
  /** Groups whose ring rows takes in flight serve (see `pick`). */
  #borrowed: GroupTurn[] = [];
  /** Every group of this take, once: two states of one group could pick one entry twice. */
  readonly #seen = new Map<string, GroupTurn>();
  /** The picks of the last `pick`, by index: their group. */
  #lastPicks: GroupTurn[] = [];
  /** A group was passed over for its concurrency. */
  heldByConcurrency = false;
  /** When the first group passed over for its rate may start again (ms, on the clock `now` is read from). */
  limitedUntil: number | undefined;

  constructor(tx: Transaction, keys: TypeKeys, limits: GroupLimits | undefined, now: number, claims: PendingClaims | undefined, once?: OncePerAttempt) {
    this.#tx = tx;
    this.#keys = keys;
    this.#groupKeys = keys.groups;
    this.#limits = limits;
    this.#now = now;
    this.#claims = claims;
    this.#once = once;
  }

  async #load(): Promise<void> {
    this.#loaded = true;
    // A snapshot read of a counter every take adds its turns to: takes in
    // flight at once may hand out the same turn numbers, to different groups
    // (a turn's row holds its group), which then share a place in the ring
    // in the order of their names; a turn handed out after a take committed
    // is never before that take's.
    const next = await this.#tx.snapshot().get(this.#groupKeys.nextTurn);
    this.#nextTurn = next === undefined || next.length !== 8 ? 0 : Number(next.readBigInt64LE(0));
    this.#ringNext = this.#groupKeys.turns.range().begin;
    this.#arrived = await this.#readArrivals();
  }

  /**
   * Reads the next page of the ring, a snapshot read: a take reads conflicts
   * only on the rows of the groups it serves (see `#serve`), and passes over
   * the rows other takes of this process in flight serve, as it does their
   * queue entries (pending-queue.ts), so that takes at once serve different
   * groups rather than conflict on the first.
   */
  async #readRing(wanted: number): Promise<void> {
    const groups = this.#groupKeys;
    const claimed = this.#claims?.claimed;
    const limit = wanted + (claimed?.size ?? 0);
    const rows = await this.#tx.snapshot().getRange(this.#ringNext as Buffer, groups.turns.range().end, { limit });
    const last = rows.at(-1);
    this.#ringNext = rows.length < limit || last === undefined ? undefined : Buffer.concat([last.key, ZERO]);
    for (const row of rows) {
      const [turn, group] = groups.turns.unpack(row.key) as [number | bigint, string];
      const queue = group === UNGROUPED ? undefined : groups.queuePrefix(group);
      if (claimed !== undefined && claimed.size > 0 && claimed.has(claimKey(row.key))) {
        this.#borrow(group, queue);
        this.#skippedClaims = true;
        continue;
      }
      const seen = this.#seen.get(group);
      if (seen !== undefined) {
        // Borrowed from a take in flight's arrival, before this row was read: served here by its row instead.
        if (seen.picked > 0 || !this.#borrowed.includes(seen)) continue;
        this.#borrowed = this.#borrowed.filter((each) => each !== seen);
      }
      const state = newTurn(group, Number(turn), queue);
      this.#seen.set(group, state);
      this.#order.push(state);
    }
  }

  #borrow(group: string, queue: Buffer | undefined): void {
    if (this.#seen.has(group)) return;
    const state = newTurn(group, undefined, queue);
    this.#seen.set(group, state);
    this.#borrowed.push(state);
  }

  /** The take serves `turn`'s group: its ring row joins the read conflicts and this process's claims. */
  #serve(turn: GroupTurn): void {
    if (turn.turn === undefined) return;
    const key = this.#groupKeys.turn(turn.turn, turn.group);
    this.#tx.addReadConflictKey(key);
    this.#claims?.claim(key);
  }

  /**
   * The groups enqueued to since the last take that have no turn, given one
   * at the back (in the order of their names); and the jobs without a group,
   * when their queue has a job and no turn. They are served once the whole
   * ring is.
   */
  async #readArrivals(): Promise<GroupTurn[]> {
    const tx = this.#tx;
    const groups = this.#groupKeys;
    const arrived: GroupTurn[] = [];
    const rows = await tx.snapshot().getRange(groups.arrivals.range().begin, groups.arrivals.range().end, { limit: ARRIVALS_PER_TAKE });
    const claimed = this.#claims?.claimed;
    for (const row of rows) {
      if (claimed !== undefined && claimed.size > 0 && claimed.has(claimKey(row.key))) {
        // A take in flight gives this group its turn: this one may borrow from its queue.
        const [group] = groups.arrivals.unpack(row.key) as [string];
        this.#borrow(group, groups.queuePrefix(group));
        this.#skippedClaims = true;
        continue;
      }
      this.#claims?.claim(row.key);
      // An arrival written after this read makes the take run again: none is lost.
      tx.addReadConflictKey(row.key);
      tx.clear(row.key);
      const [group] = groups.arrivals.unpack(row.key) as [string];
      if (this.#seen.has(group) || (await tx.get(groups.turnOfKey(group))) !== undefined) continue;
      const state = newTurn(group, undefined, groups.queuePrefix(group));
      this.#seen.set(group, state);
      arrived.push(state);
    }
    if ((await tx.snapshot().get(groups.turnOfKey(UNGROUPED))) === undefined) {
      const range = this.#keys.pending.range();
      const front = await tx.snapshot().getRange(range.begin, range.end, { limit: 1 });
      if (front.length > 0 && !this.#seen.has(UNGROUPED)) {
        const state = newTurn(UNGROUPED, undefined, undefined);
        this.#seen.set(UNGROUPED, state);
        arrived.push(state);
      }
    }
    return arrived;
  }

  /** Reads what the group's limits leave it, the first time it comes up. */
  async #gate(turn: GroupTurn): Promise<number> {
    if (turn.free !== undefined) return turn.free;
    const limits = this.#limits;
    let free = Number.POSITIVE_INFINITY;
    if (limits !== undefined && turn.group !== UNGROUPED) {
      if (limits.concurrency !== undefined) {
        // A snapshot read: see the top of this file; `settle` adds the conflict on the takes key.
        const value = await this.#tx.snapshot().get(this.#groupKeys.runningKey(turn.group));
        const running = value === undefined ? 0 : Math.max(0, Number(value.readBigInt64LE(0)));
        free = Math.max(0, limits.concurrency - running);
      }
      if (limits.rate !== undefined) {
        const value = await this.#tx.get(this.#groupKeys.rateWindowKey(turn.group));
        turn.log = RateLog.read(value, limits.rate, this.#now);
        free = Math.min(free, turn.log.room(limits.rate));
      }
    }
    turn.free = free;
    return free;
  }

  /** Up to `n` jobs, one per group and pass, in turn order. */
  async pick(maxScheduledTime: number | undefined, n: number): Promise<DequeueResult> {
    if (!this.#loaded) await this.#load();
    const jobs: DequeuedJob[] = [];
    const picks: GroupTurn[] = [];
    let nextScheduledTime: number | undefined;
    for (;;) {
      let progressed = false;
      for (let index = 0; jobs.length < n; index++) {
        // The end of what is read: the ring's next page, then the arrivals, before a second pass.
        while (index === this.#order.length && (this.#ringNext !== undefined || !this.#arrivedServed)) {
          if (this.#ringNext !== undefined) await this.#readRing(Math.min(TURNS_PER_TAKE, n - jobs.length + RING_SLACK));
          else {
            this.#arrivedServed = true;
            this.#order.push(...this.#arrived);
          }
        }
        if (index === this.#order.length) break;
        const turn = this.#order[index] as GroupTurn;
        if (turn.picked === 0) this.#serve(turn);
        const job = await this.#pickFrom(turn, maxScheduledTime);
        if (job === undefined) continue;
        jobs.push(job);
        picks.push(turn);
        progressed = true;
      }
      if (!progressed || jobs.length === n) break;
    }
    // Every group this take may serve gave what it could: the groups takes
    // in flight serve give it the rest of their queues, by turns, with their
    // rows left to those takes (so their places in the ring do not conflict).
    while (jobs.length < n) {
      let progressed = false;
      for (const turn of this.#borrowed) {
        if (jobs.length === n) break;
        const job = await this.#pickFrom(turn, maxScheduledTime);
        if (job === undefined) continue;
        jobs.push(job);
        picks.push(turn);
        progressed = true;
      }
      if (!progressed) break;
    }
    for (const turn of [...this.#order, ...this.#borrowed]) {
      if (turn.notDueUntil !== undefined) nextScheduledTime = Math.min(nextScheduledTime ?? turn.notDueUntil, turn.notDueUntil);
    }
    this.#lastPicks = picks;
    return { jobs, nextScheduledTime: jobs.length < n ? nextScheduledTime : undefined, skippedClaims: this.#skippedClaims };
  }

  /** The next job of `turn`'s group the take may start, if any. */
  async #pickFrom(turn: GroupTurn, maxScheduledTime: number | undefined): Promise<DequeuedJob | undefined> {
    if (turn.empty) return undefined;
    if (turn.picked >= (await this.#gate(turn))) {
      this.#passOver(turn);
      return undefined;
    }
    let job: DequeuedJob | undefined;
    if (turn.group === UNGROUPED) {
      const read = dequeuePending(this.#tx, this.#keys, maxScheduledTime, 1, this.#claims);
      const result = read instanceof Promise ? await read : read;
      if (result.skippedClaims) {
        this.#skippedClaims = true;
        turn.passedClaims = true;
      }
      job = result.jobs[0];
      if (job === undefined) {
        turn.notDueUntil = result.nextScheduledTime;
        turn.empty = result.nextScheduledTime === undefined && !result.skippedClaims;
      }
    } else {
      job = await this.#nextDue(turn, maxScheduledTime);
    }
    if (job !== undefined) turn.picked += 1;
    return job;
  }

  #passOver(turn: GroupTurn): void {
    const rate = this.#limits?.rate;
    const reopens = turn.log === undefined || rate === undefined ? undefined : turn.log.reopensAt(rate, turn.picked);
    if (reopens !== undefined) {
      this.limitedUntil = Math.min(this.limitedUntil ?? reopens, reopens);
    } else {
      this.heldByConcurrency = true;
    }
  }

  /** The group's best due job, reading its queue a page at a time; `undefined` when none is due. */
  async #nextDue(turn: GroupTurn, maxScheduledTime: number | undefined): Promise<DequeuedJob | undefined> {
    const prefix = this.#groupKeys.queuePrefix(turn.group);
    for (;;) {
      let key = turn.entries.shift();
      while (key !== undefined) {
        const parts = parsePendingKeyFast(prefix, key);
        if (parts === undefined) throw new JobsError('corrupt_record', `a group's pending key does not decode: ${key.toString('hex')}`);
        if (maxScheduledTime === undefined || parts.scheduledTime <= maxScheduledTime) {
          return { key, id: parts.id, priority: parts.priority, scheduledTime: parts.scheduledTime, recordKey: this.#keys.job(parts.id), idBytes: undefined, claim: undefined };
        }
        // Not due: it stays queued; a job of a lower priority after it may be due.
        turn.notDueUntil = Math.min(turn.notDueUntil ?? parts.scheduledTime, parts.scheduledTime);
        key = turn.entries.shift();
      }
      if (turn.next === undefined) {
        turn.empty = turn.notDueUntil === undefined && !turn.passedClaims;
        return undefined;
      }
      const claimed = this.#claims?.claimed;
      const skipping = claimed !== undefined && claimed.size > 0;
      const limit = GROUP_PAGE + (skipping ? claimed.size : 0);
      const page = await this.#tx.snapshot().getRange(turn.next, keyAfterPrefix(prefix), { limit });
      const last = page.at(-1);
      turn.next = page.length < limit || last === undefined ? undefined : Buffer.concat([last.key, ZERO]);
      for (const row of page) {
        // Taken by a take still committing.
        if (skipping && claimed.has(claimKey(row.key))) {
          this.#skippedClaims = true;
          turn.passedClaims = true;
        } else {
          turn.entries.push(row.key);
        }
      }
    }
  }

  /**
   * The take took the entry at `index` of the last `pick` out of the queue:
   * it made the job running (`own`), or the entry was stale. An entry the
   * take left (at its byte budget) keeps its group in the ring.
   */
  taken(index: number, own: boolean): void {
    const turn = this.#lastPicks[index];
    if (turn === undefined) return;
    turn.consumed += 1;
    if (own) turn.taken += 1;
  }

  /**
   * Writes what the take changed: the groups it gave a turn and did not
   * serve join the back of the ring, then each group it served, in the order
   * it served them, or leaves the ring when its queue is empty; the counters
   * count the jobs taken.
   */
  settle(): void {
    if (!this.#loaded) return;
    const tx = this.#tx;
    const groups = this.#groupKeys;
    const startTurn = this.#nextTurn;
    for (const turn of this.#arrived) {
      // Not reached by this take (or found with nothing due): its place is the back.
      if (turn.picked === 0 && !turn.empty && turn.notDueUntil === undefined) this.#queueUp(turn.group);
    }
    for (const turn of this.#order) {
      const served = turn.picked > 0 || turn.notDueUntil !== undefined;
      // A group whose every job this take read was picked has nothing left.
      const leaves =
        turn.empty ||
        (turn.group !== UNGROUPED &&
          turn.picked > 0 &&
          turn.consumed === turn.picked &&
          turn.entries.length === 0 &&
          turn.next === undefined &&
          turn.notDueUntil === undefined &&
          !turn.passedClaims);
      if (turn.turn !== undefined && (served || leaves)) tx.clear(groups.turn(turn.turn, turn.group));
      if (leaves) {
        if (turn.turn !== undefined) tx.clear(groups.turnOfKey(turn.group));
      } else if (served) {
        this.#queueUp(turn.group);
      }
    }
    for (const turn of [...this.#order, ...this.#borrowed]) {
      if (turn.taken === 0 || turn.group === UNGROUPED) continue;
      tx.atomicAdd(groups.runningKey(turn.group), BigInt(turn.taken));
      this.#once?.startedGroupRuns?.(this.#keys, turn.group, turn.taken);
      if (this.#limits?.concurrency !== undefined) {
        const takes = groups.takesKey(turn.group);
        tx.addReadConflictKey(takes);
        tx.addWriteConflictKey(takes);
      }
      if (turn.log !== undefined) tx.set(groups.rateWindowKey(turn.group), turn.log.bytes(turn.taken));
    }
    if (this.#nextTurn !== startTurn) tx.atomicAdd(groups.nextTurn, this.#nextTurn - startTurn);
  }

  #queueUp(group: string): void {
    const turn = this.#nextTurn;
    this.#nextTurn += 1;
    const value = Buffer.alloc(8);
    value.writeDoubleBE(turn, 0);
    this.#tx.set(this.#groupKeys.turn(turn, group), EMPTY);
    this.#tx.set(this.#groupKeys.turnOfKey(group), value);
  }

  /**
   * What a take that found too few jobs waits on: the pending counter (an
   * enqueue), and when a group was held by its concurrency the count of
   * ended grouped runs too (an end frees a slot; see the top of this file).
   */
  watch(tx: Transaction): Watch {
    const pending = tx.watch(this.#keys.watchesPending);
    if (!this.heldByConcurrency) return pending;
    return eitherWatch(pending, tx.watch(this.#groupKeys.endedRuns));
  }
}

function newTurn(group: string, turn: number | undefined, queue: Buffer | undefined): GroupTurn {
  return { group, turn, entries: [], next: queue, picked: 0, consumed: 0, taken: 0, free: undefined, log: undefined, notDueUntil: undefined, empty: false, passedClaims: false };
}

/**
 * Counts the entries of one page of the type's group queues, from `start`,
 * up to `limit` keys read; with `maxScheduledTime` only due jobs count.
 * Returns where to continue (as countPendingPage does for the type's own queue).
 */
export async function countGroupedPendingPage(
  tx: ReadTransaction,
  keys: TypeKeys,
  start: Buffer,
  limit: number,
  maxScheduledTime: number | undefined,
): Promise<{ count: number; next: Buffer | undefined }> {
  const pending = keys.groups.pending;
  const rows = await tx.getRange(start, pending.range().end, { limit });
  let count = 0;
  for (const row of rows) {
    if (maxScheduledTime === undefined) count += 1;
    else {
      const scheduledTime = pending.unpack(row.key)[2];
      if (typeof scheduledTime === 'number' && scheduledTime <= maxScheduledTime) count += 1;
    }
  }
  const last = rows.at(-1);
  return { count, next: rows.length < limit || last === undefined ? undefined : Buffer.concat([last.key, ZERO]) };
}
