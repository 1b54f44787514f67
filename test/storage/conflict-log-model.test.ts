// The conflict log against a plain model: every batch's writes kept in a
// list and checked one by one. Whatever order of commits, seals, partial
// index builds (a check in the middle of a batch), compactions at publish
// and forgets the engine goes through, a check of a read version the log
// still covers must find exactly the conflicts the model finds.

import test from 'ava';
import fc from 'fast-check';
import { ConflictLog, type BatchWrites } from '../../packages/core/src/storage/embedded/conflict-log.js';

/** Keys are one or two letters of a small alphabet, so ranges and points overlap often. */
const keyArb = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), minLength: 1, maxLength: 2 });
const rangeArb = fc.tuple(keyArb, keyArb).map(([x, y]) => (x < y ? [x, y] : [y, `${y}z`]) as [string, string]);

type Step =
  | { kind: 'commit'; points: string[]; extras: string[]; ranges: Array<[string, string]>; newBatch: boolean }
  | { kind: 'check'; back: number; keys: string[]; ranges: Array<[string, string]> }
  | { kind: 'publish' }
  /** Many one-key batches, published: enough for the log to compact its list of batches. */
  | { kind: 'bulk'; count: number; key: string }
  | { kind: 'forget'; keep: number; byTime: boolean };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('commit' as const),
    points: fc.array(keyArb, { maxLength: 3 }),
    extras: fc.array(keyArb, { maxLength: 2 }),
    ranges: fc.array(rangeArb, { maxLength: 1 }),
    newBatch: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('check' as const),
    back: fc.nat(6),
    keys: fc.array(keyArb, { maxLength: 3 }),
    ranges: fc.array(rangeArb, { maxLength: 2 }),
  }),
  fc.constant({ kind: 'publish' as const }),
  fc.record({ kind: fc.constant('bulk' as const), count: fc.integer({ min: 300, max: 700 }), key: keyArb }),
  fc.record({ kind: fc.constant('forget' as const), keep: fc.nat(4), byTime: fc.boolean() }),
);

interface ModelBatch {
  version: number;
  writes: BatchWrites;
  points: Set<string>;
  ranges: Array<[string, string]>;
  published: boolean;
}

function modelConflicts(batches: readonly ModelBatch[], readVersion: number, keys: string[], ranges: Array<[string, string]>): boolean {
  for (const batch of batches) {
    if (batch.version <= readVersion) continue;
    for (const key of keys) {
      if (batch.points.has(key)) return true;
      for (const [s, e] of batch.ranges) if (s <= key && key < e) return true;
    }
    for (const [s, e] of ranges) {
      for (const key of batch.points) if (s <= key && key < e) return true;
      for (const [cs, ce] of batch.ranges) if (cs < e && s < ce) return true;
    }
  }
  return false;
}

test('the conflict log finds exactly the conflicts a plain list of batches finds, through index builds, compactions and forgets', (t) => {
  const seen = { conflict: 0, clean: 0, listCompactions: 0 };
  fc.assert(
    fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80 }), (steps) => {
      const log = new ConflictLog(0);
      const batches: ModelBatch[] = []; // not forgotten, oldest first
      let version = 0;
      let forgottenThrough = 0;
      let open: ModelBatch | undefined;
      let forgotten = 0;
      for (const step of steps) {
        switch (step.kind) {
          case 'commit': {
            if (open === undefined || step.newBatch) {
              open?.writes.seal();
              version += 10;
              open = { version, writes: log.open(version), points: new Set(), ranges: [], published: false };
              batches.push(open);
            }
            const map = new Map(step.points.map((key) => [key, { key: Buffer.from(key, 'latin1') }]));
            log.recordPoints(open.writes, map);
            for (const [s, e] of step.ranges) log.recordRange(open.writes, Buffer.from(s, 'latin1'), Buffer.from(e, 'latin1'));
            for (const key of step.extras) log.recordKey(open.writes, Buffer.from(key, 'latin1'), key);
            for (const key of [...step.points, ...step.extras]) open.points.add(key);
            open.ranges.push(...step.ranges);
            break;
          }
          case 'check': {
            // Any read version the log still covers, from the newest back.
            const readVersion = Math.max(forgottenThrough, version - step.back * 5);
            if (!log.covers(readVersion)) return false;
            const keys = step.keys;
            const ranges = step.ranges.map(([s, e]) => [Buffer.from(s, 'latin1'), Buffer.from(e, 'latin1')] as const);
            const expected = modelConflicts(batches, readVersion, keys, step.ranges);
            if (log.conflicts(readVersion, keys, ranges) !== expected) return false;
            seen[expected ? 'conflict' : 'clean'] += 1;
            break;
          }
          case 'publish': {
            // The oldest unpublished batch is written and published (sealed first).
            const next = batches.find((batch) => !batch.published);
            if (next === undefined) break;
            next.writes.seal();
            if (next === open) open = undefined;
            next.published = true;
            next.writes.durableAt = 0;
            log.compact(next.writes);
            break;
          }
          case 'bulk': {
            open?.writes.seal();
            open = undefined;
            for (let i = 0; i < step.count; i++) {
              version += 10;
              const batch: ModelBatch = { version, writes: log.open(version), points: new Set([step.key]), ranges: [], published: true };
              log.recordPoints(batch.writes, new Map([[step.key, { key: Buffer.from(step.key, 'latin1') }]]));
              batch.writes.seal();
              batch.writes.durableAt = 0;
              batches.push(batch);
            }
            // Published in order after any older unpublished batch: publish those first.
            for (const batch of batches) {
              if (!batch.published) {
                batch.writes.seal();
                batch.published = true;
                batch.writes.durableAt = 0;
              }
              log.compact(batch.writes);
            }
            break;
          }
          case 'forget': {
            // Forget published batches up to some version (an older reader may keep the rest).
            const published = batches.filter((batch) => batch.published);
            const through = published.length > step.keep ? (published[published.length - 1 - step.keep] as ModelBatch).version : 0;
            if (step.byTime) {
              log.forget(1, 0); // every published batch became durable at 0 < 1
              while (batches[0]?.published) {
                forgottenThrough = (batches.shift() as ModelBatch).version;
                forgotten += 1;
              }
            } else {
              log.forget(Number.NEGATIVE_INFINITY, through);
              while (batches[0] !== undefined && batches[0].version <= through) {
                forgottenThrough = (batches.shift() as ModelBatch).version;
                forgotten += 1;
              }
            }
            break;
          }
        }
      }
      if (forgotten > 1024) seen.listCompactions += 1;
      return true;
    }),
    { numRuns: 2000 },
  );
  // The runs exercise both answers, many times.
  t.true(seen.conflict > 300 && seen.clean > 300 && seen.listCompactions > 10, JSON.stringify(seen));
});
