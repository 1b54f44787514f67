// How the conflict log checks a point read: against the write sets of the
// few batches newer than the read version one by one (the usual case), or
// through its key index when many are newer; both must give the same
// answers. And a batch kept for an older reader is compacted to its keys
// only once it has been durable for a while.

import test from 'ava';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';

const b = (text: string) => Buffer.from(text);

function writes(...keys: string[]): Map<string, { key: Buffer }> {
  return new Map(keys.map((key) => [key, { key: b(key) }]));
}

/** A log of `batches` batches at versions 10, 20, ..., each writing `k<version>` and its stamped key `s<version>`. */
function logOf(batches: number): ConflictLog {
  const log = new ConflictLog(0);
  for (let i = 1; i <= batches; i++) {
    const version = i * 10;
    const batch = log.open(version);
    log.recordPoints(batch, writes(`k${version}`, 'shared'));
    log.recordKey(batch, b(`s${version}`), `s${version}`);
  }
  return log;
}

for (const batches of [2, 100]) {
  test(`with ${batches} batches newer than a read, a point read conflicts exactly with the keys they wrote`, (t) => {
    const log = logOf(batches);
    const newest = batches * 10;
    for (const readVersion of [0, 5, 10, newest - 10, newest - 1]) {
      for (let i = 1; i <= batches; i++) {
        const version = i * 10;
        t.is(log.conflicts(readVersion, [`k${version}`], []), version > readVersion, `k${version} read at ${readVersion}`);
        t.is(log.conflicts(readVersion, [`s${version}`], []), version > readVersion, `s${version} read at ${readVersion}`);
      }
      t.true(log.conflicts(readVersion, ['shared'], []));
      t.false(log.conflicts(readVersion, ['never-written', 'k1'], []));
    }
    t.false(log.conflicts(newest, ['shared'], []));
  });
}

test('a key written after a check of its batch is found by the next check, with or without the index', (t) => {
  for (const batches of [1, 60]) {
    const log = logOf(batches);
    const last = log.open(batches * 10 + 10);
    t.false(log.conflicts(0, ['late'], []));
    log.recordKey(last, b('late'), 'late');
    t.true(log.conflicts(0, ['late'], []));
    log.recordPoints(last, writes('later'));
    t.true(log.conflicts(0, ['later'], []));
  }
});

test('a batch kept for an older reader keeps its write maps until it has been durable for the compaction delay', (t) => {
  const log = new ConflictLog(0);
  const batch = log.open(10);
  log.recordPoints(batch, writes('a', 'b'));
  log.recordKey(batch, b('s'), 's');
  batch.seal();
  batch.durableAt = 1_000;
  log.compactDurableBefore(1_000);
  t.is(batch.pointMaps.length, 1);
  log.compactDurableBefore(1_001);
  t.is(batch.pointMaps.length, 0);
  t.deepEqual([...batch.extraStrings].sort(), ['a', 'b', 's']);
  for (const key of ['a', 'b', 's']) t.true(log.conflicts(5, [key], []));
  t.false(log.conflicts(5, ['c'], []));
  t.true(log.conflicts(5, [], [[b('a'), b('b')]]));
  // A batch not durable yet is never compacted, nor any batch after it.
  const pending = log.open(20);
  log.recordPoints(pending, writes('p'));
  const after = log.open(30);
  after.durableAt = 0;
  log.recordPoints(after, writes('q'));
  log.compactDurableBefore(Number.POSITIVE_INFINITY);
  t.is(pending.pointMaps.length, 1);
  t.is(after.pointMaps.length, 1);
});
