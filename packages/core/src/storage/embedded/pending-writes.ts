// A transaction's buffered writes, kept in a normal form that serves both
// read-your-writes and commit: first the cleared ranges, then one mutation
// per key (the net effect of everything the transaction did to that key,
// with clears folded in), then the versionstamped keys. A later clearRange
// erases the point mutations it covers, and an atomic add after a clear or a
// set folds into a plain set, so applying the three parts in that order
// gives the same result as replaying the calls one by one.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { applyAdd, foldOperands } from '../atomic-add.js';
import { VERSIONSTAMP_BYTES } from '../limits.js';
import { keyHashOfBytes } from './key-filter.js';
import { PointMap } from './point-map.js';

export type PointMutation =
  | { kind: 'set'; key: Buffer; value: Buffer }
  /** `value` is always undefined: a clear is the KeyChange a commit writes, as a set is. */
  | { kind: 'clear'; key: Buffer; value: undefined }
  /** An add over the value committed before this transaction (nothing in the transaction set it). */
  | { kind: 'add'; key: Buffer; operand: bigint }
  | { kind: 'stamped-value'; key: Buffer; template: Buffer; offset: number };

export interface StampedKey {
  template: Buffer;
  offset: number;
  value: Buffer;
  /**
   * Ranges cleared after this key was set that may hold it: whether they do
   * depends on the stamp, so the commit drops the key if its final form
   * falls in one (FoundationDB applies a transaction's mutations in call
   * order, with the stamp filled in).
   */
  clearedAfter: Array<[Buffer, Buffer]> | undefined;
}

/** What a read of one key finds in the buffer. */
export type BufferedRead =
  | { found: false }
  | { found: true; value: Buffer | undefined }
  | { found: true; addOver: bigint };

const NOT_FOUND: BufferedRead = { found: false };
const CLEARED: BufferedRead = { found: true, value: undefined };

function inside(key: Buffer, start: Buffer, end: Buffer): boolean {
  return Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0;
}

/** Whether a stamped key, once its stamp is known, falls in a range cleared after it was set. */
export function clearedAfterStamp(key: Buffer, clearedAfter: Array<[Buffer, Buffer]> | undefined): boolean {
  if (clearedAfter === undefined) return false;
  for (const [start, end] of clearedAfter) if (inside(key, start, end)) return true;
  return false;
}

/**
 * Whether the ranges cover every key from `from` to `to` (`to` itself too
 * when `toInclusive`).
 */
function coveredBy(from: Buffer, to: Buffer, toInclusive: boolean, ranges: Array<[Buffer, Buffer]> | undefined): boolean {
  if (ranges === undefined) return false;
  const sorted = [...ranges].sort((a, b) => Buffer.compare(a[0], b[0]));
  let reached = from; // every key below `reached` (and from `from` on) is covered
  for (const [start, end] of sorted) {
    if (Buffer.compare(start, reached) > 0) break; // a gap at `reached`
    if (Buffer.compare(end, reached) > 0) reached = end;
  }
  const past = Buffer.compare(reached, to);
  return toInclusive ? past > 0 : past >= 0;
}

export class PendingWrites {
  /** Net mutation per key (by a hash of its bytes: see point-map.ts). */
  readonly points = new PointMap<PointMutation>();
  /** Cleared ranges `[start, end)`, in call order. */
  readonly clears: Array<[Buffer, Buffer]> = [];
  readonly stampedKeys: StampedKey[] = [];
  /** Bytes of keys and values written, for the transaction size limit. */
  bytes = 0;

  get isEmpty(): boolean {
    return this.points.size === 0 && this.clears.length === 0 && this.stampedKeys.length === 0;
  }

  set(key: Buffer, value: Buffer): void {
    this.points.set({ kind: 'set', key, value });
    this.bytes += key.length + value.length;
  }

  clear(key: Buffer): void {
    this.points.set({ kind: 'clear', key, value: undefined });
    this.bytes += key.length;
  }

  clearRange(start: Buffer, end: Buffer): void {
    this.points.deleteWhere((mutation) => inside(mutation.key, start, end));
    // A versionstamped key whose every possible stamp falls in the range is
    // cleared now; one that only some stamps put in the range is cleared at
    // commit if its stamp does.
    for (let i = this.stampedKeys.length - 1; i >= 0; i--) {
      const stamped = this.stampedKeys[i] as StampedKey;
      const { template, offset } = stamped;
      const lowest = Buffer.from(template).fill(0, offset, offset + VERSIONSTAMP_BYTES);
      const highest = Buffer.from(template).fill(0xff, offset, offset + VERSIONSTAMP_BYTES);
      if (inside(lowest, start, end) && inside(highest, start, end)) this.stampedKeys.splice(i, 1);
      else if (Buffer.compare(highest, start) >= 0 && Buffer.compare(lowest, end) < 0) {
        stamped.clearedAfter ??= [];
        stamped.clearedAfter.push([start, end]);
      }
    }
    this.clears.push([start, end]);
    this.bytes += start.length + end.length;
  }

  add(key: Buffer, operand: bigint): void {
    const hash = keyHashOfBytes(key);
    const previous = this.points.get(key, hash);
    this.bytes += key.length + 8;
    if (previous === undefined) {
      if (this.#cleared(key)) this.points.set({ kind: 'set', key, value: applyAdd(undefined, operand) }, hash);
      else this.points.set({ kind: 'add', key, operand }, hash);
      return;
    }
    switch (previous.kind) {
      case 'set':
        this.points.set({ kind: 'set', key, value: applyAdd(previous.value, operand) }, hash);
        return;
      case 'clear':
        this.points.set({ kind: 'set', key, value: applyAdd(undefined, operand) }, hash);
        return;
      case 'add':
        this.points.set({ kind: 'add', key, operand: foldOperands(previous.operand, operand) }, hash);
        return;
      case 'stamped-value':
        throw new FdbError(
          FdbErrorCode.client_invalid_operation,
          'atomicAdd on a key whose versionstamped value is only known at commit',
        );
    }
  }

  setStampedValue(key: Buffer, template: Buffer, offset: number): void {
    this.points.set({ kind: 'stamped-value', key, template, offset });
    this.bytes += key.length + template.length;
  }

  setStampedKey(template: Buffer, offset: number, value: Buffer): void {
    this.stampedKeys.push({ template, offset, value, clearedAfter: undefined });
    this.bytes += template.length + value.length;
  }

  /**
   * Whether `key` may be a key this transaction versionstamped: any key that
   * matches a template outside its stamp bytes (the stamp is unknown until
   * commit, so the whole family is unreadable).
   */
  isStampedKey(key: Buffer): boolean {
    for (const { template, offset, clearedAfter } of this.stampedKeys) {
      if (key.length !== template.length) continue;
      if (
        key.compare(template, 0, offset, 0, offset) === 0 &&
        key.compare(template, offset + VERSIONSTAMP_BYTES, template.length, offset + VERSIONSTAMP_BYTES, key.length) === 0 &&
        // A range cleared after the stamped key reads as cleared, as in FoundationDB's read-your-writes map.
        !clearedAfterStamp(key, clearedAfter)
      ) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether `[start, end)` may contain a key this transaction versionstamped:
   * it overlaps the span of the key's possible stamps somewhere that no
   * range cleared after it covers.
   */
  rangeHasStampedKey(start: Buffer, end: Buffer): boolean {
    for (const { template, offset, clearedAfter } of this.stampedKeys) {
      const lowest = Buffer.from(template).fill(0, offset, offset + VERSIONSTAMP_BYTES);
      const highest = Buffer.from(template).fill(0xff, offset, offset + VERSIONSTAMP_BYTES);
      if (Buffer.compare(highest, start) < 0 || Buffer.compare(lowest, end) >= 0) continue;
      // The overlap, [from, to] with `to` inclusive when it is the highest stamp.
      const from = Buffer.compare(lowest, start) > 0 ? lowest : start;
      const toInclusive = Buffer.compare(highest, end) < 0;
      const to = toInclusive ? highest : end;
      if (!coveredBy(from, to, toInclusive, clearedAfter)) return true;
    }
    return false;
  }

  /** Whether a clearRange of this transaction covers `key`. */
  #cleared(key: Buffer): boolean {
    for (const [start, end] of this.clears) if (inside(key, start, end)) return true;
    return false;
  }

  /** The buffered state of one key; `found: false` means "read the snapshot". */
  read(key: Buffer): BufferedRead {
    const mutation = this.points.get(key);
    if (mutation === undefined) return this.clears.length > 0 && this.#cleared(key) ? CLEARED : NOT_FOUND;
    switch (mutation.kind) {
      case 'set':
        return { found: true, value: mutation.value };
      case 'clear':
        return CLEARED;
      case 'add':
        return { found: true, addOver: mutation.operand };
      case 'stamped-value':
        throw new FdbError(FdbErrorCode.accessed_unreadable, 'this transaction set a versionstamped value at this key');
    }
  }

  /** Whether any cleared range overlaps `[start, end)` or any point mutation falls inside it. */
  touchesRange(start: Buffer, end: Buffer): boolean {
    for (const [clearStart, clearEnd] of this.clears) {
      if (Buffer.compare(clearStart, end) < 0 && Buffer.compare(start, clearEnd) < 0) return true;
    }
    for (const mutation of this.points.values()) if (inside(mutation.key, start, end)) return true;
    return false;
  }

  /** Point mutations inside `[start, end)`, sorted by key. */
  pointsInside(start: Buffer, end: Buffer): PointMutation[] {
    const found: PointMutation[] = [];
    for (const mutation of this.points.values()) if (inside(mutation.key, start, end)) found.push(mutation);
    return found.sort((a, b) => Buffer.compare(a.key, b.key));
  }

  /** Whether a clearRange of this transaction covers `key` (public form for range merging). */
  cleared(key: Buffer): boolean {
    return this.clears.length > 0 && this.#cleared(key);
  }
}
