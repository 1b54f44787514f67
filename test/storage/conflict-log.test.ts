// The conflict log on its own: its key index is built only when a check
// needs it, and a batch it no longer needs (forgotten, or kept only for its
// keys) holds on to nothing else.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import test from 'ava';
import { ConflictLog, type PointWrites } from '../../packages/core/src/storage/embedded/conflict-log.js';

const b = (text: string) => Buffer.from(text);

/** One transaction's point writes, as the engine hands them to the log. */
function writes(...keys: string[]): Map<string, { key: Buffer }> {
  return new Map(keys.map((key) => [key, { key: b(key) }]));
}

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Whether the object behind `ref` can be collected: a WeakRef is held until the current job ends, so wait a turn first. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let round = 0; round < 5; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    if (ref.deref() === undefined) return true;
  }
  return false;
}

test('a transaction that read at the newest version conflicts with nothing; one that read a batch earlier conflicts with that batch', (t) => {
  const log = new ConflictLog(0);
  const batch = log.open(10);
  log.recordPoints(batch, writes('a'));
  t.false(log.conflicts(10, ['a'], []));
  t.false(log.conflicts(11, ['a'], []));
  t.true(log.conflicts(9, ['a'], []));
  t.true(log.conflicts(9, [], [[b('a'), b('b')]]));
  t.false(log.conflicts(9, ['b'], [[b('b'), b('c')]]));
});

test('writes that join a batch after a check are found by the next check, and the newest batch to write a key decides', (t) => {
  const log = new ConflictLog(0);
  const first = log.open(10);
  log.recordPoints(first, writes('a'));
  t.true(log.conflicts(5, ['a'], [])); // indexes batch 10 as it is now
  log.recordPoints(first, writes('b')); // a later transaction of the same batch
  log.recordKey(first, b('c'), 'c');
  t.true(log.conflicts(5, ['b'], []));
  t.true(log.conflicts(5, ['c'], []));
  const second = log.open(20);
  log.recordPoints(second, writes('a'));
  t.true(log.conflicts(15, ['a'], []));
  t.false(log.conflicts(15, ['b', 'c'], []));
  // Forgetting batch 10 leaves batch 20's entry for `a`.
  log.forget(0, 10);
  t.true(log.conflicts(15, ['a'], []));
  t.false(log.conflicts(15, ['b'], []));
});

test('a batch forgotten by the log is released at once, not when the log next compacts its list', async (t) => {
  const log = new ConflictLog(0);
  // Nothing outside the log may hold the batch or its key.
  const ref = ((): WeakRef<Buffer> => {
    const key = b('forgotten');
    const batch = log.open(10);
    log.recordKey(batch, key, 'forgotten');
    batch.seal();
    return new WeakRef(key);
  })();
  t.true(log.conflicts(5, ['forgotten'], []));
  log.forget(0, 10);
  t.is(log.size, 0);
  t.true(await collected(ref));
});

test('a batch kept for an older reader keeps its keys but lets go of its transactions’ write maps', async (t) => {
  const log = new ConflictLog(0);
  const batch = log.open(10);
  let map: PointWrites | undefined = writes('k1', 'k2');
  const ref = new WeakRef(map);
  log.recordPoints(batch, map);
  log.recordPoints(batch, writes('k3'));
  t.true(log.conflicts(5, ['k1'], [])); // indexed before compaction
  log.recordKey(batch, b('k4'), 'k4'); // not indexed yet
  batch.seal();
  map = undefined;
  log.compact(batch);
  t.true(await collected(ref));
  for (const key of ['k1', 'k2', 'k3', 'k4']) t.true(log.conflicts(5, [key], []), key);
  t.false(log.conflicts(5, ['k5'], []));
  t.true(log.conflicts(5, [], [[b('k2'), b('k3')]]));
  t.false(log.conflicts(5, [], [[b('k5'), b('k6')]]));
  // Forgetting it removes every key it put in the index.
  log.forget(0, 10);
  const later = log.open(20);
  log.recordKey(later, b('other'), 'other');
  for (const key of ['k1', 'k2', 'k3', 'k4']) t.false(log.conflicts(10, [key], []), key);
});
