// The embedded engine's resolver and group commit.
//
// A committing transaction is checked against the conflict log (every batch
// newer than its read version, including batches not yet durable), then
// joins the open batch, whose commit version is fixed when it opens; its
// place in the batch is its batch order, so its versionstamp is known at
// once. A batch is written as ONE lmdb transaction, so all the transactions
// in it share one fsync.
//
// Reads must never see data a crash could still lose, yet lmdb makes a write
// visible to its readers (commit) before it is on disk (flush). So only one
// batch is ever being committed by lmdb: the moment it commits, the engine
// takes an lmdb read snapshot, which is then exactly "the store at this
// batch's version", and only then starts the next batch. The snapshot is
// *published* (becomes the read version for new transactions) when the
// flush is reported, in version order, and only then do the batch's commit
// promises resolve and its watches fire.
//
// A batch's lmdb write starts when its first transaction joins it (or when
// the previous write commits, if transactions are already waiting): that
// opens lmdb's transaction for the current event turn, which commits at the
// end of the turn (`LmdbStore.write`). Every transaction that commits until
// then joins the batch. Transactions are resolved (conflict-checked) the
// moment they commit, and each one's key changes go into lmdb's open
// transaction at once (`LmdbStore.writeEarly`): the transactions waiting
// when the write starts, then each one as it joins. lmdb's writer thread
// updates its B-tree while this thread runs the rest of the turn (the next
// workers' bodies, the next accept), instead of receiving the whole batch
// at the end of the turn and starting only then, which shortens the wait
// from the end of the turn to the commit. Each transaction goes in whole (its long keys' buckets
// too), so if a later one fails to be written, the batch's outcome is
// unknown (1021) but no transaction is visible half applied, and the
// watches of what was written still fire.
//
// A lone commit (nothing else being written or waiting to be published, and
// the previous batch held a single transaction: one client committing at a
// time) is instead written in a synchronous lmdb transaction on this thread
// (`LmdbStore.writeNow`), which returns once the batch is synced: no hand-off
// to lmdb's writer thread and back, twice (commit, then flush), when the
// threads have gone idle. That shortens a lone commit's time to durable and
// its CPU, and with them a job's add -> start with an idle worker. It
// blocks the event loop for the sync, which is why streams of commits keep
// the asynchronous write: with many clients, writing every batch this way
// costs throughput (the main thread cannot run transactions while a batch
// syncs), while the single-transaction rule leaves it unchanged.
//
// Why not a second lmdb write in flight while one syncs: counted over the
// storage and jobs benchmarks (8 to 64 closed-loop clients, 50-worker
// drains), no transaction ever commits while a write is in flight, because
// every client is waiting for the write it is in; and lmdb-js reports a
// write's commit and its flush in the same wake-up, so there is no window
// in which to prepare the next batch against a committed but unsynced
// write. A second slot would only split a batch in two writes and two
// syncs. Most of a cycle is lmdb's writer (commit + sync); the main
// thread's share is the gap from one write's flush to the next write's
// start, which starting lmdb's transaction in the engine's own event turn
// (rather than a turn after it) keeps short.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { applyAdd } from '../atomic-add.js';
import { TRANSACTION_LIFE_MS } from '../limits.js';
import { writeVersionstamp } from '../versionstamp.js';
import { type BatchWrites, ConflictLog } from './conflict-log.js';
import { type KeyChange, type LmdbStore, type StoreSnapshot, type StoreWrite, type WriteContents, lastChanges } from './lmdb-store.js';
import { type PendingWrites, clearedAfterStamp } from './pending-writes.js';
import { type KeyWatch, WatchRegistry } from './watch-registry.js';

/** Batch order is a 16-bit field of the versionstamp. */
const MAX_BATCH_MEMBERS = 0x10000;
/** Length of the retired-snapshot list past which ended snapshots are swept out of its middle. */
const RETIRED_SWEEP_LENGTH = 64;
/** Batches are remembered this long after becoming durable, beyond the transaction life. */
const LOG_MARGIN_MS = 1_000;
/** A batch still in the conflict log this long after becoming durable keeps only its keys (see `ConflictLog.compactDurableBefore`). */
const LOG_COMPACT_AFTER_MS = 50;

/** Everything the resolver needs from a committing transaction. */
export interface CommitRequest {
  /** The read version, or undefined when the transaction never read. */
  readonly readVersion: number | undefined;
  /** Point read conflicts, as latin1 strings of the keys. */
  readonly readKeys: readonly string[];
  /** Range read conflicts, `[start, end)`. */
  readonly readRanges: ReadonlyArray<readonly [Buffer, Buffer]>;
  readonly writes: PendingWrites;
  readonly writeConflictKeys: readonly Buffer[];
  readonly watches: readonly KeyWatch[];
  /** The snapshot the transaction read from (for the value its watches saw). */
  readonly snapshot: StoreSnapshot | undefined;
}

/** An accepted commit: its versionstamp is known at once, its durability later. */
export interface CommitTicket {
  version: number;
  /** The transaction's place in its batch. */
  order: number;
  /**
   * Resolves once the batch is durable; rejects when it failed. Shared by
   * every transaction of the batch (one promise per batch, not per commit).
   */
  durable: Promise<void>;
}

/** A versionstamped key, resolved once the commit has joined a batch. */
interface StampedChange extends KeyChange {
  key: Buffer;
}

interface Member {
  request: CommitRequest;
  order: number;
  stampedKeys: StampedChange[];
  /** Per watch, the value the transaction saw; filled when the batch is built. */
  seen: Array<Buffer | undefined>;
}

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

interface Batch {
  version: number;
  writes: BatchWrites;
  members: Member[];
  /** What every member's commit waits for; settled when the batch is published. */
  durable: Promise<void>;
  resolveDurable: () => void;
  rejectDurable: (error: unknown) => void;
  /** The key changes of the members applied so far, in order, one array per application. */
  parts: KeyChange[][];
  /**
   * The last change of each key (by latin1 string), built from `parts` only
   * when something needs it (an atomic add, a range clear, a watch), and
   * kept up to date from then on: most batches never need it.
   */
  changes: Map<string, KeyChange> | undefined;
  /** Members whose changes are computed (and, while streaming, handed to lmdb), in batch order. */
  applied: number;
  /** The asynchronous lmdb write of this batch, once started. */
  storeWrite: StoreWrite | undefined;
  /**
   * How many of `parts` lmdb took whole before its write failed, if it
   * failed: those are in the store, and their watches fire (see `#publish`).
   */
  writtenParts: number;
  /**
   * lmdb's transaction for this batch is open (its write started, and the
   * event turn has not ended): a member that joins is written at once.
   */
  streaming: boolean;
  /** The store right after this batch, taken when lmdb committed it. */
  snapshot: StoreSnapshot | undefined;
  flushed: boolean;
  error: unknown;
}

/** The batch's last change of each key (see `Batch.changes`), built now if it was not yet. */
function changesOf(batch: Batch): Map<string, KeyChange> {
  batch.changes ??= lastChanges(batch.parts, batch.parts.length);
  return batch.changes;
}

/** The value of `key` once the changes built so far are applied over `base`. */
function valueAfter(changes: Map<string, KeyChange>, base: StoreSnapshot, key: Buffer, keyString: string): Buffer | undefined {
  const change = changes.get(keyString);
  return change === undefined ? base.get(key) : change.value;
}

export class CommitPipeline {
  readonly #store: LmdbStore;
  readonly #now: () => number;
  readonly #log: ConflictLog;
  readonly #watches = new WatchRegistry();
  /** The durable snapshot new transactions read from. */
  #published: StoreSnapshot;
  /**
   * Snapshots published before `#published` that transactions may still
   * read from, oldest first: the first one not yet ended is the oldest read
   * version in use, below which the conflict log can forget.
   */
  readonly #retired: StoreSnapshot[] = [];
  /** The store after the last batch lmdb committed (base for building the next one). */
  #head: StoreSnapshot;
  #lastVersion: number;
  #open: Batch | undefined;
  /** Full batches waiting to be written, oldest first. */
  readonly #ready: Batch[] = [];
  #writing: Batch | undefined;
  /** Batches written or being written, not yet published, oldest first. */
  readonly #unpublished: Batch[] = [];
  #closing = false;
  #closed = false;
  /** Retries waiting for a version to become durable (see `waitForDurable`). */
  #durableWaiters: RetryWaiter[] = [];
  #recheckQueued = false;
  /** The newest batch that was published or failed. */
  #passedVersion = 0;
  #idleWaiters: Array<() => void> = [];
  /** Transactions in the last batch written: 1 (or 0, before the first) marks a lone-commit workload. */
  #lastBatchSize = 0;

  constructor(store: LmdbStore, now: () => number) {
    this.#store = store;
    this.#now = now;
    const version = store.lastVersion();
    this.#lastVersion = version;
    this.#passedVersion = version;
    this.#log = new ConflictLog(version);
    const snapshot = store.snapshot(version);
    this.#published = snapshot.retain();
    this.#head = snapshot.retain();
  }

  /** The version of the last durable commit: the read version of new transactions. */
  get durableVersion(): number {
    return this.#published.version;
  }

  now(): number {
    return this.#now();
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** Closed: snapshots are gone, nothing may be read any more. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The newest commit version handed out (durable or not). */
  get lastVersion(): number {
    return this.#lastVersion;
  }

  /**
   * Resolves when a transaction that lost a conflict should retry: once the
   * version it conflicted with is durable, so that the retry reads what it
   * lost to (retrying sooner would read the same old version and lose again).
   *
   * Losers on a hot key would otherwise all retry at once and all but one
   * lose again. So the waiter with the most failed attempts is woken first,
   * and the others a macrotask later, each only if its last read set does
   * not already conflict with a newer, not yet durable commit (typically
   * the first one's); if it does, it waits for that commit in turn, keeping
   * its place. Every transaction gets its turn and few retries are wasted.
   */
  waitForDurable(
    version: number,
    priority: number,
    readKeys: readonly string[],
    readRanges: ReadonlyArray<readonly [Buffer, Buffer]>,
  ): Promise<void> {
    if (version <= this.#passedVersion || this.#closing) return Promise.resolve();
    return new Promise((resolve) => this.#durableWaiters.push({ version, priority, readKeys, readRanges, resolve }));
  }

  /** Wakes the first retry whose wait is over (`passed`: durable, or failed and so never to be read). */
  #wakeDurableWaiters(passed: number): void {
    if (!this.#durableWaiters.some((w) => w.version <= passed)) return;
    this.#wakeWaiters(1);
    if (this.#durableWaiters.some((w) => w.version <= this.#passedVersion) && !this.#recheckQueued) {
      this.#recheckQueued = true;
      setImmediate(() => {
        this.#recheckQueued = false;
        this.#wakeWaiters(Number.POSITIVE_INFINITY);
      });
    }
  }

  /**
   * Wakes up to `limit` waiters whose version has passed, highest priority
   * first, skipping (and re-arming for the newest version) those whose last
   * read set conflicts with a commit that is not durable yet.
   */
  #wakeWaiters(limit: number): void {
    const ready = this.#durableWaiters.filter((w) => w.version <= this.#passedVersion);
    // Stable sort: equal priorities keep their arrival order.
    ready.sort((a, b) => b.priority - a.priority);
    const woken = new Set<RetryWaiter>();
    for (const waiter of ready) {
      if (woken.size >= limit) break;
      // Only commits after #passedVersion count: older ones are readable now (or failed, never to be read).
      if (this.#log.conflicts(this.#passedVersion, waiter.readKeys, waiter.readRanges)) waiter.version = this.#lastVersion;
      else woken.add(waiter);
    }
    if (woken.size === 0) return;
    this.#durableWaiters = this.#durableWaiters.filter((w) => !woken.has(w));
    for (const waiter of woken) waiter.resolve();
  }

  /** The durable snapshot, retained for a transaction; it must `release()` it. */
  acquireSnapshot(): StoreSnapshot {
    return this.#published.retain();
  }

  /**
   * Resolves the transaction against newer commits and adds it to the open
   * batch; throws 1020 on a conflict. Its ticket's `durable` resolves once
   * it is durable.
   */
  commit(request: CommitRequest): CommitTicket {
    if (this.#closing) throw new FdbError(FdbErrorCode.client_invalid_operation, 'the database is closed');
    const { readVersion } = request;
    if (readVersion !== undefined && (request.readKeys.length > 0 || request.readRanges.length > 0)) {
      if (!this.#log.covers(readVersion)) {
        throw new FdbError(FdbErrorCode.transaction_too_old, 'the read version is older than the conflict log');
      }
      if (this.#log.conflicts(readVersion, request.readKeys, request.readRanges)) {
        throw new FdbError(FdbErrorCode.not_committed, 'a key this transaction read was changed by a newer commit');
      }
    }
    let batch = this.#open;
    if (batch === undefined || batch.members.length >= MAX_BATCH_MEMBERS) {
      // A full batch that is already being written needs no place in the queue.
      if (batch !== undefined && batch !== this.#writing) this.#ready.push(batch);
      batch = this.#openBatch();
    }
    const order = batch.members.length;
    const { writes } = request;
    this.#log.recordPoints(batch.writes, writes.points);
    for (const [start, end] of writes.clears) this.#log.recordRange(batch.writes, start, end);
    const stampedKeys: StampedChange[] = [];
    for (const { template, offset, value, clearedAfter } of writes.stampedKeys) {
      // The template is the transaction's own copy, never read again once it commits: stamped in place.
      writeVersionstamp(template, offset, batch.version, order);
      const key = template;
      if (clearedAfterStamp(key, clearedAfter)) continue; // its range was cleared (and logged) after it was set
      // No latin1 string of the key here: the conflict log makes one only if a check may hit it.
      this.#log.recordKey(batch.writes, key);
      stampedKeys.push({ key, value });
    }
    for (const key of request.writeConflictKeys) this.#log.recordKey(batch.writes, key);
    batch.members.push({ request, order, stampedKeys, seen: [] });
    if (batch.streaming) this.#stream(batch);
    else this.#queueWrite();
    return { version: batch.version, order, durable: batch.durable };
  }

  /** Arms the watches of a transaction that committed without writing anything. */
  armReadOnly(watches: readonly KeyWatch[], snapshot: StoreSnapshot | undefined): void {
    const source = snapshot ?? this.#published;
    for (const watch of watches) {
      this.#watches.arm(watch, source.get(watch.key), this.#published.get(watch.key));
    }
  }

  /** Waits for every accepted commit to be durable, then frees the snapshots. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const waiter of this.#durableWaiters) waiter.resolve();
    this.#durableWaiters = [];
    if (!this.#isIdle()) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    this.#closed = true;
    this.#watches.cancelAll();
    this.#head.release();
    this.#published.release();
  }

  #openBatch(): Batch {
    const version = Math.max(this.#lastVersion + 1, Date.now() * 1000);
    this.#lastVersion = version;
    let resolveDurable!: () => void;
    let rejectDurable!: (error: unknown) => void;
    const durable = new Promise<void>((resolve, reject) => {
      resolveDurable = resolve;
      rejectDurable = reject;
    });
    // Every member awaits it; this only keeps a failed batch whose members
    // all gave up from counting as an unhandled rejection.
    durable.catch(() => {});
    const batch: Batch = {
      version,
      writes: this.#log.open(version),
      members: [],
      durable,
      resolveDurable,
      rejectDurable,
      parts: [],
      changes: undefined,
      applied: 0,
      storeWrite: undefined,
      writtenParts: 0,
      streaming: false,
      snapshot: undefined,
      flushed: false,
      error: undefined,
    };
    this.#open = batch;
    return batch;
  }

  #queueWrite(): void {
    if (this.#writing === undefined) this.#writeNext();
  }

  /**
   * Starts the lmdb write of the next batch if none is being written. The
   * open batch keeps taking transactions until lmdb's event turn ends (see
   * `LmdbStore.write`): the turn is the group in group commit.
   */
  #writeNext(): void {
    if (this.#writing !== undefined) return;
    const batch = this.#ready.shift() ?? this.#open;
    if (batch === undefined) {
      this.#notifyIfIdle();
      return;
    }
    const writing = batch;
    this.#writing = writing;
    this.#unpublished.push(writing);
    if (this.#unpublished.length === 1 && this.#lastBatchSize <= 1) {
      // A lone commit (see the top of this file): written at the end of the
      // event turn, like lmdb's own write, so transactions committing until
      // then still join it.
      setImmediate(() => this.#writeNow(writing));
      return;
    }
    let write: StoreWrite;
    try {
      write = this.#store.write(writing.version, () => this.#fill(writing));
    } catch (error) {
      if (this.#open === writing) this.#open = undefined;
      this.#writeFailed(writing, error);
      return;
    }
    // The batch's transactions so far go to lmdb now, and each one that
    // joins until the turn ends goes at once: lmdb's writer thread updates
    // its B-tree while this thread runs the rest of the turn, instead of
    // starting only once the turn is over.
    writing.storeWrite = write;
    writing.streaming = true;
    this.#stream(writing);
    write.committed.then(
      () => {
        writing.error ??= write.error;
        this.#captureSnapshot(writing, 0);
      },
      (error: unknown) => this.#writeFailed(writing, error),
    );
    write.flushed.then(
      () => {
        writing.flushed = true;
        this.#advance();
      },
      (error: unknown) => {
        writing.error ??= error;
        writing.flushed = true;
        this.#advance();
      },
    );
  }

  /** Writes a batch on this thread, durable when the call returns (see `LmdbStore.writeNow`). */
  #writeNow(batch: Batch): void {
    try {
      this.#store.writeNow(batch.version, () => this.#fill(batch));
    } catch (error) {
      if (this.#open === batch) this.#open = undefined;
      this.#writeFailed(batch, error);
      return;
    }
    batch.flushed = true;
    this.#captureSnapshot(batch, 0);
  }

  /**
   * Closes the batch being written and builds the final key values of its
   * members not written yet (all of them for a write made in place) over the
   * store as lmdb last committed it.
   */
  #fill(batch: Batch): WriteContents {
    if (this.#open === batch) this.#open = undefined;
    batch.streaming = false;
    this.#lastBatchSize = batch.members.length;
    batch.writes.seal();
    const base = this.#head;
    // After a failed early write nothing more of the batch is written.
    if (batch.storeWrite?.error !== undefined) return { changes: [], base };
    return { changes: this.#applyPending(batch, base), base };
  }

  /**
   * Writes the members that joined a streaming batch into lmdb's open
   * transaction, each whole. If that fails, the changes it computed are
   * dropped from the batch's record of what it wrote.
   */
  #stream(batch: Batch): void {
    const write = batch.storeWrite as StoreWrite;
    if (write.error !== undefined) return;
    const from = batch.parts.length;
    const base = this.#head;
    this.#store.writeEarly(() => ({ changes: this.#applyPending(batch, base), base }));
    if (write.error === undefined) {
      batch.writtenParts = batch.parts.length;
    } else if (batch.parts.length > from) {
      batch.parts.length = from;
      batch.changes = undefined;
    }
  }

  /** Applies the members not applied yet, in batch order; returns the key changes they make, in order. */
  #applyPending(batch: Batch, base: StoreSnapshot): KeyChange[] {
    const out: KeyChange[] = [];
    batch.parts.push(out);
    while (batch.applied < batch.members.length) this.#apply(batch, batch.members[batch.applied++] as Member, base, out);
    return out;
  }

  /**
   * Takes the read snapshot of a batch lmdb just committed. Nothing else
   * is written until it is taken (it must show exactly this batch), so if
   * lmdb has no free reader slot right now (long transactions hold them),
   * it tries again shortly rather than failing a batch that is already in.
   */
  #captureSnapshot(batch: Batch, attempt: number): void {
    let snapshot: StoreSnapshot;
    try {
      snapshot = this.#store.snapshot(batch.version).retain();
    } catch {
      setTimeout(() => this.#captureSnapshot(batch, attempt + 1), Math.min(2 ** attempt, 50));
      return;
    }
    this.#head.release();
    this.#head = snapshot;
    batch.snapshot = snapshot.retain();
    this.#writing = undefined;
    this.#writeNext();
    this.#advance();
  }

  #writeFailed(batch: Batch, error: unknown): void {
    batch.error = error;
    batch.flushed = true;
    if (this.#writing === batch) this.#writing = undefined;
    this.#writeNext();
    this.#advance();
  }

  /**
   * Applies one member's writes over the batch's changes so far and `base`
   * (atomic adds read the latest value here, which is what makes them
   * conflict-free), pushing each key change it makes onto `out`, and
   * records the value each of its watches saw. A key several members
   * change is pushed once per member: lmdb applies them in order.
   */
  #apply(batch: Batch, member: Member, base: StoreSnapshot, out: KeyChange[]): void {
    const { writes, watches } = member.request;
    for (const [start, end] of writes.clears) {
      const changes = changesOf(batch);
      // Replaced, not changed in place: a change may be a transaction's own mutation object (below).
      for (const [keyString, change] of changes) {
        if (change.value !== undefined && Buffer.compare(start, change.key) <= 0 && Buffer.compare(change.key, end) < 0) {
          const cleared = { key: change.key, value: undefined };
          changes.set(keyString, cleared);
          out.push(cleared);
        }
      }
      for (const { key } of base.range(start, end, false)) {
        const keyString = key.toString('latin1');
        if (!changes.has(keyString)) {
          const cleared = { key, value: undefined };
          changes.set(keyString, cleared);
          out.push(cleared);
        }
      }
    }
    // Values, not entries: a [key, value] pair per key was most of what a
    // batch allocated here. The key strings are looked up only when the
    // batch keeps its map of changes (rarely: see `Batch.changes`).
    for (const mutation of writes.points.values()) {
      let change: KeyChange;
      switch (mutation.kind) {
        case 'set':
        case 'clear':
          // The mutation is a KeyChange already ({ key, value }); reusing it saves an object per key.
          change = mutation;
          break;
        case 'add': {
          const keyString = mutation.key.toString('latin1');
          const changes = changesOf(batch);
          change = { key: mutation.key, value: applyAdd(valueAfter(changes, base, mutation.key, keyString), mutation.operand) };
          out.push(change);
          changes.set(keyString, change);
          continue;
        }
        case 'stamped-value':
          // Stamped in place, as the keys are in `commit`: the template is the transaction's own copy.
          writeVersionstamp(mutation.template, mutation.offset, batch.version, member.order);
          change = { key: mutation.key, value: mutation.template };
          break;
      }
      out.push(change);
      batch.changes?.set(mutation.key.toString('latin1'), change);
    }
    for (const stamped of member.stampedKeys) {
      out.push(stamped);
      batch.changes?.set(stamped.key.toString('latin1'), stamped);
    }
    for (const watch of watches) {
      const wrote = writes.touches(watch.key) || member.stampedKeys.some((c) => c.key.equals(watch.key));
      if (wrote) member.seen.push(valueAfter(changesOf(batch), base, watch.key, watch.keyString));
      else member.seen.push((member.request.snapshot ?? base).get(watch.key));
    }
  }

  /** Publishes, in version order, every batch that is committed and flushed. */
  #advance(): void {
    for (;;) {
      const batch = this.#unpublished[0];
      if (batch === undefined || !batch.flushed || (batch.snapshot === undefined && batch.error === undefined)) break;
      this.#unpublished.shift();
      this.#publish(batch);
    }
    this.#notifyIfIdle();
  }

  #publish(batch: Batch): void {
    const now = this.#now();
    batch.writes.durableAt = now;
    this.#passedVersion = batch.version;
    if (batch.snapshot === undefined) {
      // lmdb rejected the write: nothing of this batch is in the store.
      const failure = new FdbError(FdbErrorCode.operation_failed, 'the storage engine failed to write a commit batch', {
        cause: batch.error,
      });
      batch.rejectDurable(failure);
      this.#log.compact(batch.writes);
      this.#wakeDurableWaiters(batch.version);
      return;
    }
    const previous = this.#published;
    this.#published = batch.snapshot;
    batch.snapshot = undefined;
    previous.release();
    if (!previous.ended) this.#retired.push(previous);
    if (batch.error !== undefined) {
      const unknown = new FdbError(FdbErrorCode.commit_unknown_result, 'the commit batch may not have reached the disk', {
        cause: batch.error,
      });
      batch.rejectDurable(unknown);
      // What lmdb took of the batch, whole transactions written early, is in
      // the store and readable now: watches of the keys they changed fire.
      if (!this.#watches.isEmpty && batch.writtenParts > 0) this.#watches.onDurable(lastChanges(batch.parts, batch.writtenParts));
    } else {
      batch.resolveDurable();
      if (!this.#watches.isEmpty) this.#watches.onDurable(changesOf(batch));
      for (const member of batch.members) {
        const { watches } = member.request;
        for (let i = 0; i < watches.length; i++) {
          const watch = watches[i] as KeyWatch;
          this.#watches.arm(watch, member.seen[i], this.#published.get(watch.key));
        }
      }
    }
    // Forgetting as soon as no transaction reads below a batch keeps the log
    // (and what it holds on to) small: under a steady write load, waiting the
    // whole transaction life would keep seconds of keys alive.
    this.#log.forget(now - TRANSACTION_LIFE_MS - LOG_MARGIN_MS, this.#oldestReadVersion());
    // Kept a while longer for an older read version: keep the batch's keys, not its transactions' values.
    this.#log.compactDurableBefore(now - LOG_COMPACT_AFTER_MS);
    this.#wakeDurableWaiters(batch.version);
  }

  /** The oldest version a live transaction may read at (and so resolve from). */
  #oldestReadVersion(): number {
    const retired = this.#retired;
    let ended = 0;
    while (ended < retired.length && (retired[ended] as StoreSnapshot).ended) ended++;
    if (ended > 0) retired.splice(0, ended);
    // A long transaction keeps the first one alive while later ones end:
    // drop those now and then, so the list stays as long as the number of
    // versions actually being read (at most the lmdb reader slots).
    if (retired.length > RETIRED_SWEEP_LENGTH) {
      let kept = 0;
      for (const snapshot of retired) if (!snapshot.ended) retired[kept++] = snapshot;
      retired.length = kept;
    }
    return retired[0]?.version ?? this.#published.version;
  }

  #isIdle(): boolean {
    return this.#open === undefined && this.#ready.length === 0 && this.#writing === undefined && this.#unpublished.length === 0;
  }

  #notifyIfIdle(): void {
    if (this.#idleWaiters.length === 0 || !this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
