// The embedded engine's resolver and group commit. What a batch holds and
// how its transactions' writes become key changes is commit-batch.ts; the
// retries that wait for a commit to become durable, retry-waiters.ts.
// The rest stays in this one file, over 500 lines: the resolver's order, the one write
// slot and the publication of snapshots in version order are one state
// machine, whose parts read and change each other's fields at every step.
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
// One exception, with the default durability: a batch one of whose
// transactions asked to be told when it is readable (`onVisible`: a write
// that hands a just-added job to a waiting accept) is written
// asynchronously and published for reading as soon as lmdb reports it
// visible, and those transactions are told then; its commit promises still
// resolve, and its watches fire, once it is flushed. Reading it early is
// safe for what it is used for: a later commit that read it is
// acknowledged only after its own flush, which (lmdb writing in order)
// covers it, and only an OS crash, which ends every reader with it, can
// lose it (docs/durability.md).
//
// A batch's lmdb write starts when its first transaction joins it (or when
// the previous write commits, if transactions are already waiting): that
// opens lmdb's transaction for the current event turn, which commits at the
// end of the turn (`LmdbStore.write`). Every transaction that commits until
// then joins the batch. Transactions are resolved (conflict-checked) the
// moment they commit, and each one's key changes go into lmdb's open
// transaction at once (`LmdbStore.writeEarly`): the transactions waiting
// when the write starts, then each one as it joins. lmdb's writer thread
// takes the transaction as it opens (`LmdbStore`'s `batchStartThreshold`)
// and updates its B-tree while this thread runs the rest of the turn (the
// next workers' bodies, the next accept), instead of receiving the whole
// batch at the end of the turn and starting only then, which shortens the
// wait from the end of the turn to the commit: for an idle add, by the
// writer thread's wake-up. Each transaction goes in whole (its long keys' buckets
// too), so if a later one fails to be written, the batch's outcome is
// unknown (1021) but no transaction is visible half applied, and the
// watches of what was written still fire.
//
// A lone commit (nothing else being written or waiting to be published, and
// the previous batch held a single transaction: one client committing at a
// time) of a few key changes is instead written in a synchronous lmdb transaction on this thread
// (`LmdbStore.writeNow`), which returns once the batch is synced: no hand-off
// to lmdb's writer thread and back, twice (commit, then flush), when the
// threads have gone idle. That shortens a lone commit's time to durable and
// its CPU, and with them a job's add -> start with an idle worker. It
// blocks the event loop for the sync, which is why streams of commits keep
// the asynchronous write: with many clients, writing every batch this way
// costs throughput (the main thread cannot run transactions while a batch
// syncs), while the single-transaction rule leaves it unchanged. A lone
// bulk commit (a batch of accepts or finishes, an addMany, a prune) keeps
// the asynchronous write too: the rule cannot see two clients that commit
// in turn (a drain beside a pruner), and the other one would wait out the
// bulk commit's whole sync.
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
//
// Deferred durability (opt-in, `durability: 'deferred'`) moves the
// acknowledgement from the flush to the commit: a batch is published (its
// snapshot read by new transactions, its commit promises resolved, its
// watches fired) as soon as lmdb's transaction is visible, which lmdb-js
// reports ahead of the flush only through commit-visibility.ts. The data is
// then in the OS page cache, so a process crash loses nothing; lmdb still
// syncs each write right after committing it, with the overlapping sync that
// keeps the store intact on an OS crash, which can then lose the batches
// acknowledged in the last few milliseconds (those whose sync had not
// finished). The lone-commit path is not used (its synchronous lmdb
// transaction returns only once synced), and the next batch's write starts
// as soon as this one is visible, so it commits while this one syncs. A
// flush that fails after its batch was acknowledged cannot be reported to
// that batch's transactions any more: the pipeline then refuses every new
// commit, since what it acknowledged may not reach the disk.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { TRANSACTION_LIFE_MS } from '../limits.js';
import { writeVersionstamp } from '../versionstamp.js';
import { type Batch, type Member, type StampedChange, applyPending, newBatch } from './commit-batch.js';
import type { CommitRequest, CommitTicket } from './commit-request.js';
import { ConflictLog } from './conflict-log.js';
import type { LmdbStore, StoreWrite, WriteContents } from './lmdb-store.js';
import { clearedAfterStamp } from './pending-writes.js';
import { RetryWaiters } from './retry-waiters.js';
import type { StoreSnapshot } from './store-snapshot.js';
import { type KeyWatch, WatchRegistry } from './watch-registry.js';

/** Batch order is a 16-bit field of the versionstamp. */
const MAX_BATCH_MEMBERS = 0x10000;
/** Length of the retired-snapshot list past which ended snapshots are swept out of its middle. */
const RETIRED_SWEEP_LENGTH = 64;
/** Batches are remembered this long after becoming durable, beyond the transaction life. */
const LOG_MARGIN_MS = 1_000;
/** A batch still in the conflict log this long after becoming durable keeps only its keys (see `ConflictLog.compactDurableBefore`). */
const LOG_COMPACT_AFTER_MS = 50;
/**
 * The most key changes (a range clear counting as several) a lone commit
 * may hold to be written in place. A bulk transaction (a batch of accepts or
 * finishes, an addMany, a prune) gains nothing that matters from skipping the
 * writer thread's hand-off, while its longer B-tree work and sync would hold
 * the event loop: other clients on it (a drain beside a pruner, handlers on
 * the main thread) would wait the whole sync.
 */
const LONE_COMMIT_MAX_CHANGES = 64;
/**
 * The most keys a batch may write for its snapshot to take over the empty
 * ranges of the one before (each is checked against its keys); a bigger
 * batch's snapshot starts with none. Idle workloads commit a few keys at a time.
 */
const EMPTY_RANGES_CHECK_MAX_KEYS = 64;
/** What a range clear counts for against `LONE_COMMIT_MAX_CHANGES`. */
const RANGE_CLEAR_WEIGHT = 8;

/** Whether a lone commit's batch is small enough to be written in place (`LONE_COMMIT_MAX_CHANGES`). */
function isSmall(batch: Batch): boolean {
  let changes = 0;
  for (const member of batch.members) {
    const { writes } = member.request;
    changes += writes.points.size + writes.stampedKeys.length + RANGE_CLEAR_WEIGHT * writes.clears.length;
    if (changes > LONE_COMMIT_MAX_CHANGES) return false;
  }
  return true;
}

export class CommitPipeline {
  readonly #store: LmdbStore;
  readonly #now: () => number;
  readonly #log: ConflictLog;
  readonly #watches = new WatchRegistry();
  /** The snapshot new transactions read from: the last durable batch, or a later one read ahead of its flush. */
  #published: StoreSnapshot;
  /**
   * Snapshots published before `#published` that transactions may still
   * read from, oldest first: the first one not yet ended is the oldest read
   * version in use, below which the conflict log can forget.
   */
  readonly #retired: StoreSnapshot[] = [];
  /** The store after the last batch lmdb committed (base for building the next one). */
  #head: StoreSnapshot;
  /**
   * Whether the next snapshot taken is `#head` plus the batch it is taken
   * for, nothing else: no write failed since `#head` was taken. Only then
   * does it take over `#head`'s empty ranges (see `StoreSnapshot.keepEmptyRangesOf`).
   */
  #headPrecedes = true;
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
  readonly #retries: RetryWaiters;
  /** The newest batch that was published or failed. */
  #passedVersion = 0;
  #idleWaiters: Array<() => void> = [];
  /** Transactions in the last batch written: 1 (or 0, before the first) marks a lone-commit workload. */
  #lastBatchSize = 0;
  /** Batches are acknowledged when visible, ahead of their flush (see the top of this file). */
  readonly #deferred: boolean;
  /** A flush that failed after its batch was acknowledged: no commit is accepted any more. */
  #flushFailure: unknown;

  /**
   * `deferred`: acknowledge batches once visible (deferred durability),
   * which needs a store that tracks when its writes are visible.
   */
  constructor(store: LmdbStore, now: () => number, deferred = false) {
    this.#store = store;
    this.#now = now;
    this.#deferred = deferred && store.tracksVisible;
    const version = store.lastVersion();
    this.#lastVersion = version;
    this.#passedVersion = version;
    this.#log = new ConflictLog(version);
    const snapshot = store.snapshot(version);
    this.#published = snapshot.retain();
    this.#head = snapshot.retain();
    this.#retries = new RetryWaiters(
      this.#log,
      () => this.#passedVersion,
      () => this.#lastVersion,
    );
  }

  /** The read version of new transactions: the last durable commit, or a later one read ahead of its sync (see the top of this file). */
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
   * version it conflicted with is durable (see retry-waiters.ts).
   */
  waitForDurable(
    version: number,
    priority: number,
    readKeys: readonly string[],
    readRanges: ReadonlyArray<readonly [Buffer, Buffer]>,
  ): Promise<void> {
    if (version <= this.#passedVersion || this.#closing) return Promise.resolve();
    return this.#retries.wait(version, priority, readKeys, readRanges);
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
    if (this.#flushFailure !== undefined) {
      throw new FdbError(FdbErrorCode.operation_failed, 'the storage engine failed to flush acknowledged commits to disk', {
        cause: this.#flushFailure,
      });
    }
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
    batch.members.push({ request, order, stampedKeys });
    if (request.visible.length > 0) batch.early = true;
    if (batch.streaming) this.#stream(batch);
    else this.#queueWrite();
    return { version: batch.version, order, durable: batch.durable };
  }

  /** Arms the watches of a transaction that committed without writing anything. */
  armReadOnly(watches: readonly KeyWatch[]): void {
    for (const watch of watches) this.#watches.arm(watch, this.#published.get(watch.key));
  }

  /** Waits for every accepted commit to be durable, then frees the snapshots. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#retries.wakeAll();
    if (!this.#isIdle()) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    this.#closed = true;
    this.#watches.cancelAll();
    this.#head.release();
    this.#published.release();
  }

  #openBatch(): Batch {
    const version = Math.max(this.#lastVersion + 1, Date.now() * 1000);
    this.#lastVersion = version;
    const batch = newBatch(version, this.#log.open(version));
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
    if (!this.#deferred && !(writing.early && this.#store.tracksVisible) && this.#unpublished.length === 1 && this.#lastBatchSize <= 1) {
      // A lone commit (see the top of this file): written at the end of the
      // event turn, like lmdb's own write, so transactions committing until
      // then still join it.
      setImmediate(() => (isSmall(writing) ? this.#writeNow(writing) : this.#writeAsync(writing)));
      return;
    }
    this.#writeAsync(writing);
  }

  /** Starts lmdb's asynchronous write of the batch being written, streaming its members into lmdb's transaction as they join. */
  #writeAsync(writing: Batch): void {
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
    if (write.visible !== undefined && this.#deferred) {
      this.#acknowledgeWhenVisible(writing, write, write.visible);
      return;
    }
    if (write.visible !== undefined && writing.early) {
      this.#revealWhenVisible(writing, write, write.visible);
      return;
    }
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

  /**
   * Deferred durability: the batch counts as durable (is published) once
   * lmdb's transaction is visible, or committed if that notice does not come.
   */
  #acknowledgeWhenVisible(batch: Batch, write: StoreWrite, visible: Promise<void>): void {
    let acknowledged = false;
    // lmdb-js reports the end of a write and its visible notice on two
    // queues: a notice that comes after the write was reported failed must
    // not take the write slot of the batch written next.
    let failed = false;
    const acknowledge = (): void => {
      if (acknowledged || failed) return;
      acknowledged = true;
      batch.error ??= write.error;
      batch.flushed = true;
      this.#captureSnapshot(batch, 0);
    };
    visible.then(acknowledge);
    write.committed.then(acknowledge, (error: unknown) => {
      if (acknowledged) {
        this.#flushFailure ??= error;
        return;
      }
      failed = true;
      this.#writeFailed(batch, error);
    });
    write.flushed.then(undefined, (error: unknown) => {
      if (acknowledged) this.#flushFailure ??= error;
    });
  }

  /**
   * A batch a member of which asked to be told when it is readable, with
   * the default durability: new transactions read it (and those members are
   * told) once lmdb's transaction is visible, or committed if that notice
   * does not come; it is acknowledged once flushed.
   */
  #revealWhenVisible(batch: Batch, write: StoreWrite, visible: Promise<void>): void {
    let committed = false;
    // A visible notice that comes after the write was reported failed is ignored (see `#acknowledgeWhenVisible`).
    let failed = false;
    const commit = (): void => {
      if (committed || failed) return;
      committed = true;
      batch.error ??= write.error;
      this.#captureSnapshot(batch, 0);
    };
    visible.then(commit);
    write.committed.then(commit, (error: unknown) => {
      if (!committed) {
        failed = true;
        this.#writeFailed(batch, error);
        return;
      }
      batch.error ??= error;
      batch.flushed = true;
      this.#advance();
    });
    write.flushed.then(
      () => {
        batch.flushed = true;
        this.#advance();
      },
      (error: unknown) => {
        batch.error ??= error;
        batch.flushed = true;
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
    return { changes: applyPending(batch, base), base };
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
    this.#store.writeEarly(() => ({ changes: applyPending(batch, base), base }));
    if (write.error === undefined) {
      batch.writtenParts = batch.parts.length;
    } else if (batch.parts.length > from) {
      batch.parts.length = from;
      batch.changes = undefined;
      batch.addKeys = [];
    }
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
    if (this.#headPrecedes && batch.writes.keyCount <= EMPTY_RANGES_CHECK_MAX_KEYS) snapshot.keepEmptyRangesOf(this.#head, batch.writes);
    this.#headPrecedes = true;
    this.#head.release();
    this.#head = snapshot;
    batch.snapshot = snapshot.retain();
    this.#writing = undefined;
    this.#writeNext();
    this.#advance();
  }

  #writeFailed(batch: Batch, error: unknown): void {
    // Whatever lmdb did with the batch, the next snapshot is not taken to be `#head` plus one batch.
    this.#headPrecedes = false;
    batch.error = error;
    batch.flushed = true;
    if (this.#writing === batch) this.#writing = undefined;
    this.#writeNext();
    this.#advance();
  }

  /**
   * Reveals (makes readable), in version order, every batch that is
   * committed and flushed, or only committed for a batch read ahead of its
   * flush; then acknowledges, in version order, every revealed batch that is
   * flushed. Members waiting to hear that their commit is readable are told
   * last, once the pipeline's state is settled.
   */
  #advance(): void {
    let told: Member[] | undefined;
    for (const batch of this.#unpublished) {
      if (batch.revealed) continue;
      const inStore = batch.snapshot !== undefined;
      if (!inStore && batch.error === undefined) break;
      if (!batch.flushed && !(batch.early && inStore)) break;
      this.#reveal(batch);
      if (batch.early && inStore && batch.error === undefined) {
        told ??= [];
        told.push(...batch.members);
      }
    }
    for (;;) {
      const batch = this.#unpublished[0];
      if (batch === undefined || !batch.revealed || !batch.flushed) break;
      this.#unpublished.shift();
      this.#acknowledge(batch);
    }
    this.#notifyIfIdle();
    if (told !== undefined) for (const member of told) for (const callback of member.request.visible) callback();
  }

  /** New transactions read the batch from now on (nothing of it, when lmdb rejected its write). */
  #reveal(batch: Batch): void {
    batch.revealed = true;
    const now = this.#now();
    batch.writes.durableAt = now;
    this.#passedVersion = batch.version;
    if (batch.snapshot === undefined) {
      // lmdb rejected the write: nothing of this batch is in the store.
      batch.lost = true;
      this.#log.compact(batch.writes);
      this.#retries.wake(batch.version);
      return;
    }
    const previous = this.#published;
    this.#published = batch.snapshot;
    batch.snapshot = undefined;
    previous.release();
    if (!previous.ended) this.#retired.push(previous);
    // Forgetting as soon as no transaction reads below a batch keeps the log
    // (and what it holds on to) small: under a steady write load, waiting the
    // whole transaction life would keep seconds of keys alive.
    this.#log.forget(now - TRANSACTION_LIFE_MS - LOG_MARGIN_MS, this.#oldestReadVersion());
    // Kept a while longer for an older read version: keep the batch's keys, not its transactions' values.
    this.#log.compactDurableBefore(now - LOG_COMPACT_AFTER_MS);
    this.#retries.wake(batch.version);
  }

  /** Settles the commits of a revealed, flushed batch, and fires the watches of what it changed. */
  #acknowledge(batch: Batch): void {
    if (batch.lost) {
      batch.rejectDurable(
        new FdbError(FdbErrorCode.operation_failed, 'the storage engine failed to write a commit batch', {
          cause: batch.error,
        }),
      );
      return;
    }
    if (batch.error !== undefined) {
      const unknown = new FdbError(FdbErrorCode.commit_unknown_result, 'the commit batch may not have reached the disk', {
        cause: batch.error,
      });
      batch.rejectDurable(unknown);
      // What lmdb took of the batch, whole transactions written early, is in
      // the store and readable now: watches of the keys they changed fire.
      if (!this.#watches.isEmpty && batch.writtenParts > 0) this.#watches.onDurableParts(batch.parts, batch.writtenParts, undefined);
      return;
    }
    batch.resolveDurable();
    if (!this.#watches.isEmpty) this.#watches.onDurableParts(batch.parts, batch.parts.length, batch.changes);
    for (const member of batch.members) {
      const { watches } = member.request;
      for (const watch of watches) this.#watches.arm(watch, this.#published.get(watch.key));
    }
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
