// A transaction's range reads on the embedded engine: the pairs of a range
// read through the transaction's buffered writes (the snapshot's entries
// merged with its point mutations, minus the ranges it cleared), and the
// read conflict range a range read records.

import { FdbError, FdbErrorCode } from '../../errors.js';
import { applyAdd } from '../atomic-add.js';
import type { KeyValue } from '../interfaces.js';
import type { PendingWrites, PointMutation } from './pending-writes.js';
import type { StoreSnapshot } from './store-snapshot.js';

/** A pair's key (a plain function: see Hot paths in the package README). */
export function keyOf(pair: KeyValue): Buffer {
  return pair.key;
}

/** The smallest key after `key`: `key + \x00`. */
function keyAfter(key: Buffer): Buffer {
  const next = Buffer.allocUnsafe(key.length + 1);
  key.copy(next);
  next[key.length] = 0;
  return next;
}

/**
 * Adds what a buffered point mutation makes of a key to a range read's
 * results (`stored`: the value in the snapshot); true once `limit` is reached.
 */
function emitPoint(mutation: PointMutation, stored: Buffer | undefined, limit: number, out: KeyValue[]): boolean {
  let value: Buffer | undefined;
  if (mutation.kind === 'set') value = Buffer.from(mutation.value);
  else if (mutation.kind === 'add') value = applyAdd(stored, mutation.operand);
  else if (mutation.kind === 'stamped-value') {
    throw new FdbError(FdbErrorCode.accessed_unreadable, 'the range contains a key whose versionstamped value is unknown');
  }
  if (value !== undefined) out.push({ key: Buffer.from(mutation.key), value });
  return out.length >= limit;
}

/**
 * A range read's conflict range: only the part actually read (`count`
 * pairs, the last one's key `last`), as a limited read says nothing about
 * keys past its last result.
 */
export function readConflictRange(
  start: Buffer,
  end: Buffer,
  reverse: boolean,
  limit: number,
  count: number,
  last: Buffer | undefined,
): [Buffer, Buffer] {
  if (count >= limit && last !== undefined) return reverse ? [last, end] : [start, keyAfter(last)];
  return [start, end];
}

/** A range read through the buffered writes: snapshot entries merged with point mutations, minus cleared ranges. */
export function mergeRange(
  writes: PendingWrites,
  snapshot: StoreSnapshot,
  start: Buffer,
  end: Buffer,
  reverse: boolean,
  limit: number,
  out: KeyValue[],
): void {
  const points = writes.pointsInside(start, end);
  if (reverse) points.reverse();
  // Comparisons are multiplied by this, so that "comes first" is `< 0` in both directions.
  const direction = reverse ? -1 : 1;
  let next = 0;
  for (const entry of snapshot.range(start, end, reverse)) {
    for (
      let point = points[next];
      point !== undefined && Buffer.compare(point.key, entry.key) * direction < 0;
      point = points[++next]
    ) {
      if (emitPoint(point, undefined, limit, out)) return;
    }
    const point = points[next];
    if (point?.key.equals(entry.key)) {
      next++;
      if (emitPoint(point, entry.value, limit, out)) return;
      continue;
    }
    if (writes.cleared(entry.key)) continue;
    out.push(entry);
    if (out.length >= limit) return;
  }
  for (let point = points[next]; point !== undefined; point = points[++next]) {
    if (emitPoint(point, undefined, limit, out)) return;
  }
}

