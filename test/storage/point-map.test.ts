// A transaction's point writes are kept by a 30-bit hash of each key's
// bytes (point-map.ts), so two different keys may share a hash. These tests
// build such keys and pin down that they are still told apart everywhere a
// transaction's writes are looked in: the map itself, read-your-writes,
// range clears, the commit, and the conflict check.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { FdbError, FdbErrorCode } from '@jobtree/core';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';
import { FILTER_MIN_KEYS, keyHash, keyHashOfBytes } from '../../packages/core/src/storage/embedded/key-filter.js';
import { PendingWrites } from '../../packages/core/src/storage/embedded/pending-writes.js';
import { PointMap } from '../../packages/core/src/storage/embedded/point-map.js';

const b = (s: string) => Buffer.from(s, 'latin1');

/** Pairs of different keys of the form `<prefix><n>` with the same hash, found by search. */
function collidingPairs(prefix: string, count: number): Array<[string, string]> {
  const seen = new Map<number, string>();
  const pairs: Array<[string, string]> = [];
  for (let n = 0; pairs.length < count; n++) {
    const key = `${prefix}${n}`;
    const hash = keyHash(key);
    const other = seen.get(hash);
    if (other === undefined) seen.set(hash, key);
    else pairs.push([other, key]);
  }
  return pairs;
}

const PAIRS = collidingPairs('job/', 3);

test('the colliding keys really share a hash, from their bytes as from their strings', (t) => {
  for (const [a, c] of PAIRS) {
    t.not(a, c);
    t.is(keyHashOfBytes(b(a)), keyHashOfBytes(b(c)));
    t.is(keyHash(a), keyHashOfBytes(b(a)));
  }
});

test('a key hash is a small integer (no heap number as a map key) that fills all 30 bits', (t) => {
  let bits = 0;
  for (let i = 0; i < 2_000; i++) {
    const hash = keyHash(`key/${i}`);
    t.true(Number.isInteger(hash) && hash >= 0 && hash < 2 ** 30);
    bits |= hash;
  }
  t.is(bits, 2 ** 30 - 1);
});

test('a point map keeps keys that share a hash apart, through sets, overwrites and deletes', (t) => {
  const [[a, c]] = PAIRS as [[string, string]];
  const map = new PointMap<{ key: Buffer; value: string }>();
  map.set({ key: b(a), value: 'a1' });
  map.set({ key: b(c), value: 'c1' });
  t.is(map.size, 2);
  t.is(map.get(b(a))?.value, 'a1');
  t.is(map.get(b(c))?.value, 'c1');
  map.set({ key: b(c), value: 'c2' });
  map.set({ key: b(a), value: 'a2' });
  t.is(map.size, 2);
  t.is(map.get(b(a))?.value, 'a2');
  t.is(map.get(b(c))?.value, 'c2');
  t.true(map.holds(a, keyHash(a)) && map.holds(c, keyHash(c)));
  // Dropping the key in the hash's slot hands the slot to the other one.
  map.deleteWhere((entry) => entry.value === 'a2');
  t.is(map.size, 1);
  t.is(map.get(b(a)), undefined);
  t.false(map.holds(a, keyHash(a)));
  t.is(map.get(b(c))?.value, 'c2');
  t.true(map.holds(c, keyHash(c)));
  map.set({ key: b(a), value: 'a3' });
  t.is(map.size, 2);
  t.deepEqual([...map.values()].map((entry) => entry.value).sort(), ['a3', 'c2']);
  t.deepEqual([...map.hashes()], [keyHash(a)]);
});

test('a point map behaves as a map by key string, for any mix of operations on colliding keys', (t) => {
  const keys = PAIRS.flat().concat(['x', 'y']);
  const operation = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.constantFrom(...keys), value: fc.nat(9) }),
    fc.record({ op: fc.constant('drop' as const), keys: fc.subarray(keys) }),
  );
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 30 }), (operations) => {
      const map = new PointMap<{ key: Buffer; value: number }>();
      const model = new Map<string, number>();
      for (const step of operations) {
        if (step.op === 'set') {
          map.set({ key: b(step.key), value: step.value });
          model.set(step.key, step.value);
        } else {
          const dropped = new Set(step.keys);
          map.deleteWhere((entry) => dropped.has(entry.key.toString('latin1')));
          for (const key of dropped) model.delete(key);
        }
        if (map.size !== model.size) return false;
        for (const key of keys) {
          if (map.get(b(key))?.value !== model.get(key)) return false;
          if (map.holds(key, keyHash(key)) !== model.has(key)) return false;
        }
        const values = [...map.values()].map((entry) => `${entry.key.toString('latin1')}=${entry.value}`).sort();
        if (values.join() !== [...model].map(([key, value]) => `${key}=${value}`).sort().join()) return false;
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test("a transaction's buffered writes tell colliding keys apart: reads, adds, clears, and range clears", (t) => {
  const [[a, c]] = PAIRS as [[string, string]];
  const writes = new PendingWrites();
  writes.set(b(a), b('va'));
  t.deepEqual(writes.read(b(c)), { found: false });
  writes.add(b(c), 5n);
  t.deepEqual(writes.read(b(c)), { found: true, addOver: 5n });
  t.deepEqual(writes.read(b(a)), { found: true, value: b('va') });
  writes.clear(b(c));
  t.deepEqual(writes.read(b(c)), { found: true, value: undefined });
  // A range holding only the first key.
  writes.clearRange(b(a), Buffer.concat([b(a), Buffer.of(0)]));
  t.deepEqual(writes.read(b(a)), { found: true, value: undefined });
  t.is(writes.points.size, 1);
  t.deepEqual(writes.read(b(c)), { found: true, value: undefined });
});

function openDatabase(t: { teardown(fn: () => void | Promise<void>): void }): EmbeddedDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-point-map-'));
  const db = EmbeddedDatabase.open({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test('keys that share a hash are written, read back and cleared as different keys', async (t) => {
  const db = openDatabase(t);
  await db.doTransaction((tx) => {
    for (const [a, c] of PAIRS) {
      tx.set(b(a), b(`value of ${a}`));
      tx.set(b(c), b(`value of ${c}`));
    }
  });
  await db.doTransaction(async (tx) => {
    for (const [a, c] of PAIRS) {
      t.is((await tx.get(b(a)))?.toString(), `value of ${a}`);
      t.is((await tx.get(b(c)))?.toString(), `value of ${c}`);
    }
    const [a, c] = PAIRS[0] as [string, string];
    tx.clear(b(a));
    t.is(await tx.get(b(a)), undefined);
    t.is((await tx.get(b(c)))?.toString(), `value of ${c}`);
  });
  const [a, c] = PAIRS[0] as [string, string];
  t.is(await db.doTransaction((tx) => tx.get(b(a))), undefined);
  t.is((await db.doTransaction((tx) => tx.get(b(c))))?.toString(), `value of ${c}`);
});

test('a read conflicts with a newer write of the same key, not with one of a key that only shares its hash', (t) => {
  const [[a, c]] = PAIRS as [[string, string]];
  // Small and large maps: looked in directly, and through a filter.
  for (const filler of [0, FILTER_MIN_KEYS * 2]) {
    const log = new ConflictLog(0);
    const batch = log.open(10);
    const writes = new PendingWrites();
    writes.set(b(a), b('v'));
    for (let i = 0; i < filler; i++) writes.set(b(`other/${i}`), b('v'));
    log.recordPoints(batch, writes.points);
    t.true(log.conflicts(5, [a], []), `${a} with ${filler} more keys`);
    t.false(log.conflicts(5, [c], []), `${c} with ${filler} more keys`);
    writes.set(b(c), b('v'));
    const later = log.open(20);
    log.recordPoints(later, writes.points);
    t.true(log.conflicts(15, [c], []), `${c} written with ${filler} more keys`);
  }
});

/** One attempt that reads `read`, lets `meanwhile` commit, then writes: its error, or undefined once committed. */
async function readThenCommitAfter(db: EmbeddedDatabase, read: string, meanwhile: () => Promise<unknown>): Promise<unknown> {
  try {
    await db.doTransaction(
      async (tx) => {
        await tx.get(b(read));
        await meanwhile();
        tx.set(b('result'), b(read));
      },
      { retryLimit: 0 },
    );
    return undefined;
  } catch (error) {
    return error;
  }
}

test('concurrent transactions on keys that share a hash conflict only on the same key', async (t) => {
  const db = openDatabase(t);
  const [[a, c]] = PAIRS as [[string, string]];
  const otherKey = await readThenCommitAfter(db, a, () => db.doTransaction((tx) => tx.set(b(c), b('other key, same hash'))));
  t.is(otherKey, undefined);
  const sameKey = await readThenCommitAfter(db, c, () => db.doTransaction((tx) => tx.set(b(c), b('the same key'))));
  t.true(sameKey instanceof FdbError && sameKey.code === FdbErrorCode.not_committed, String(sameKey));
});
