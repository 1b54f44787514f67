// A commit batch of the embedded engine: the transactions that share one
// lmdb write (and so one fsync) and one commit version, each at its place in
// the batch, and how their writes become the batch's key changes, in
// batch order, over the store as lmdb last committed it. When a batch is
// opened, written and published is the pipeline's business
// (commit-pipeline.ts).

import { applyAdd } from '../atomic-add.js';
import { writeVersionstamp } from '../versionstamp.js';
import type { CommitRequest } from './commit-request.js';
import type { BatchWrites } from './conflict-log.js';
import { type KeyChange, type StoreWrite, lastChanges } from './lmdb-store.js';
import type { StoreSnapshot } from './store-snapshot.js';

/** A versionstamped key, resolved once the commit has joined a batch. */
export interface StampedChange extends KeyChange {
  key: Buffer;
}

/** A key an atomic add looked up by scanning a batch's changes (see `Batch.addKeys`). */
export interface AddKey {
  key: Buffer;
  /** Its last change in the parts scanned so far, if any. */
  change: KeyChange | undefined;
  /** Where the scan resumes: the part, and the index in it. */
  part: number;
  at: number;
}

/**
 * Distinct keys a batch's atomic adds may look up by scanning its changes;
 * an add to one more builds the batch's map of changes instead, so that
 * many adds to distinct keys stay linear in the batch's size.
 */
const SCANNED_ADD_KEYS = 8;

/** A transaction in a batch. */
export interface Member {
  request: CommitRequest;
  order: number;
  stampedKeys: StampedChange[];
}

/** The transactions that share one lmdb write, and what becomes of them. */
export interface Batch {
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
  /**
   * The keys atomic adds looked up while there is no `changes` map, each
   * with its last change found so far and where its scan of `parts`
   * stopped: a batch's adds touch a few counters, and finding those among
   * its changes costs less than a string and a map entry for every key it
   * writes. Emptied whenever `parts` is cut back.
   */
  addKeys: AddKey[];
  /** Members whose changes are computed (and, while streaming, handed to lmdb), in batch order. */
  applied: number;
  /** The asynchronous lmdb write of this batch, once started. */
  storeWrite: StoreWrite | undefined;
  /**
   * How many of `parts` lmdb took whole before its write failed, if it
   * failed: those are in the store, and their watches fire (see `CommitPipeline`).
   */
  writtenParts: number;
  /**
   * lmdb's transaction for this batch is open (its write started, and the
   * event turn has not ended): a member that joins is written at once.
   */
  streaming: boolean;
  /** The store right after this batch, taken when lmdb committed it. */
  snapshot: StoreSnapshot | undefined;
  /** A member asked to be told when it is readable: the batch is read ahead of its flush (see commit-pipeline.ts). */
  early: boolean;
  /** New transactions read this batch (or, failed, it was passed). */
  revealed: boolean;
  /** lmdb rejected its write: nothing of it is in the store. */
  lost: boolean;
  flushed: boolean;
  error: unknown;
}

/** A new, empty batch at `version`, whose write set is `writes` (opened in the conflict log). */
export function newBatch(version: number, writes: BatchWrites): Batch {
  let resolveDurable!: () => void;
  let rejectDurable!: (error: unknown) => void;
  const durable = new Promise<void>((resolve, reject) => {
    resolveDurable = resolve;
    rejectDurable = reject;
  });
  // Every member awaits it; this only keeps a failed batch whose members
  // all gave up from counting as an unhandled rejection.
  durable.catch(() => {});
  return {
    version,
    writes,
    members: [],
    durable,
    resolveDurable,
    rejectDurable,
    parts: [],
    changes: undefined,
    addKeys: [],
    applied: 0,
    storeWrite: undefined,
    writtenParts: 0,
    streaming: false,
    snapshot: undefined,
    early: false,
    revealed: false,
    lost: false,
    flushed: false,
    error: undefined,
  };
}

/** The batch's last change of each key (see `Batch.changes`), built now if it was not yet. */
export function changesOf(batch: Batch): Map<string, KeyChange> {
  batch.changes ??= lastChanges(batch.parts, batch.parts.length);
  return batch.changes;
}

/** The value of `key` once the changes built so far are applied over `base`. */
function valueAfter(changes: Map<string, KeyChange>, base: StoreSnapshot, key: Buffer, keyString: string): Buffer | undefined {
  const change = changes.get(keyString);
  return change === undefined ? base.get(key) : change.value;
}

/**
 * The value of `key` before an atomic add to it: its last change in the
 * batch so far, else its value in `base`. Found by scanning the batch's
 * changes (resuming where the last scan for the key stopped) while the
 * batch keeps no map of changes and its adds touch few keys.
 */
function valueBeforeAdd(batch: Batch, base: StoreSnapshot, key: Buffer): Buffer | undefined {
  let entry: AddKey | undefined;
  if (batch.changes === undefined) {
    for (const candidate of batch.addKeys) {
      if (candidate.key.length === key.length && candidate.key.equals(key)) {
        entry = candidate;
        break;
      }
    }
    if (entry === undefined && batch.addKeys.length < SCANNED_ADD_KEYS) {
      entry = { key, change: undefined, part: 0, at: 0 };
      batch.addKeys.push(entry);
    }
  }
  if (entry === undefined) return valueAfter(changesOf(batch), base, key, key.toString('latin1'));
  const { parts } = batch;
  let { part, at } = entry;
  const length = key.length;
  const last = key[length - 1];
  // The last part is the one being applied and still grows: the scan stays on it.
  while (part < parts.length) {
    const changes = parts[part] as KeyChange[];
    for (; at < changes.length; at++) {
      const other = (changes[at] as KeyChange).key;
      // Length and last byte first: most keys differ there, and comparing them costs no call into C++.
      if (other.length === length && other[length - 1] === last && other.equals(key)) entry.change = changes[at];
    }
    if (part === parts.length - 1) break;
    part++;
    at = 0;
  }
  entry.part = part;
  entry.at = at;
  return entry.change === undefined ? base.get(key) : entry.change.value;
}

/** Applies the members not applied yet, in batch order; returns the key changes they make, in order. */
export function applyPending(batch: Batch, base: StoreSnapshot): KeyChange[] {
  const out: KeyChange[] = [];
  batch.parts.push(out);
  while (batch.applied < batch.members.length) applyMember(batch, batch.members[batch.applied++] as Member, base, out);
  return out;
}

/**
 * Applies one member's writes over the batch's changes so far and `base`
 * (atomic adds read the latest value here, which is what makes them
 * conflict-free), pushing each key change it makes onto `out`. A key
 * several members change is pushed once per member: lmdb applies them in
 * order.
 */
function applyMember(batch: Batch, member: Member, base: StoreSnapshot, out: KeyChange[]): void {
  const { writes } = member.request;
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
      case 'add':
        change = { key: mutation.key, value: applyAdd(valueBeforeAdd(batch, base, mutation.key), mutation.operand) };
        break;
      case 'stamped-value':
        // Stamped in place, as the keys are in `CommitPipeline.commit`: the template is the transaction's own copy.
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
}
