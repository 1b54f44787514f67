// A transaction's point writes keyed by a 30-bit hash of the key
// bytes (point-map.ts) and the conflict filters built from those hashes
// (key-filter.ts, conflict-log.ts). The hash is inverted here, so any number
// of different keys with one hash are made at will (not only the pairs a
// search finds): groups of five, keys that differ in the last byte only,
// keys of high and NUL bytes. Each test pins down that such keys are told
// apart everywhere: the map, read-your-writes, range clears, atomic adds,
// watches, the commit, and the conflict check on both of its paths (each
// newer batch's write sets, and the key index once many batches are newer).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { applyAdd, foldOperands } from '../../packages/core/src/storage/atomic-add.js';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';
import { FILTER_MIN_KEYS, KeyFilter, keyHash, keyHashOfBytes } from '../../packages/core/src/storage/embedded/key-filter.js';
import { PendingWrites } from '../../packages/core/src/storage/embedded/pending-writes.js';
import { PointMap } from '../../packages/core/src/storage/embedded/point-map.js';

const latin1 = (key: Buffer) => key.toString('latin1');

// --- keys with one hash, made by inverting the hash --------------------------

/** The inverse of an odd number modulo 2^32 (Newton's iteration). */
function inverse(odd: number): number {
  let x = odd;
  for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(odd, x));
  return x >>> 0;
}

/** The hash's 32-bit state before its final mix, for each of the 4 states whose mix ends in `hash` (30 bits). */
function statesBeforeFinish(hash: number): number[] {
  const states: number[] = [];
  for (let top = 0; top < 4; top++) {
    let h = (hash | (top << 30)) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
    h = Math.imul(h, inverse(0xc2b2ae35)) >>> 0;
    h = (h ^ (h >>> 13) ^ (h >>> 26)) >>> 0;
    h = Math.imul(h, inverse(0x85ebca6b)) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
    states.push(h);
  }
  return states;
}

function step(hash: number, word: number): number {
  const h = Math.imul(hash ^ word, 0xcc9e2d51);
  return (h << 15) | (h >>> 17);
}

/** The four bytes that take the state `from` to `to` in one step. */
function wordBetween(from: number, to: number): number {
  const rotated = ((to >>> 15) | (to << 17)) >>> 0;
  return (Math.imul(rotated, inverse(0xcc9e2d51)) ^ from) >>> 0;
}

/**
 * `count` different keys whose hash is `hash`: `prefix` (a multiple of 4
 * bytes long), 4 bytes that tell them apart (`middle(i)`), and 4 bytes
 * computed to land on the hash.
 */
function keysWithHash(prefix: Buffer, hash: number, count: number, middle = (i: number) => i * 0x01010101): Buffer[] {
  if (prefix.length % 4 !== 0) throw new Error('the prefix must be a multiple of 4 bytes');
  const length = prefix.length + 8;
  const keys: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const key = Buffer.alloc(length);
    prefix.copy(key);
    key.writeUInt32LE(middle(i) >>> 0, prefix.length);
    let state = Math.imul(length, 0x9e3779b1);
    for (let at = 0; at + 4 <= prefix.length + 4; at += 4) state = step(state, key.readInt32LE(at));
    key.writeUInt32LE(wordBetween(state >>> 0, statesBeforeFinish(hash)[i % 4] as number), prefix.length + 4);
    keys.push(key);
  }
  return keys;
}

const GROUP = keysWithHash(Buffer.from('job/'), 0x1234567, 5);
const OTHER_GROUP = keysWithHash(Buffer.from('job/'), 0x2abcdef, 3, (i) => 0xff00ff00 + i);

test('keys made to share a hash are different keys with that hash, from bytes and from strings', (t) => {
  for (const group of [GROUP, OTHER_GROUP]) {
    t.is(new Set(group.map(latin1)).size, group.length);
    const hash = keyHashOfBytes(group[0] as Buffer);
    for (const key of group) {
      t.is(keyHashOfBytes(key), hash);
      t.is(keyHash(latin1(key)), hash);
    }
  }
  t.is(keyHashOfBytes(GROUP[0] as Buffer), 0x1234567);
});

test('the hash of a key string is the hash of its bytes, for any bytes and length', (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
      const key = Buffer.from(bytes);
      const hash = keyHashOfBytes(key);
      return hash === keyHash(latin1(key)) && Number.isInteger(hash) && hash >= 0 && hash < 2 ** 30;
    }),
    { numRuns: 2_000 },
  );
  t.pass();
});

test('a filter built from hashes answers "maybe" for every hash it holds', (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 30 - 1 }), { minLength: 1, maxLength: 600 }), (hashes) => {
      const filter = KeyFilter.ofHashes(hashes.length, hashes);
      return hashes.every((hash) => filter.mayHave(hash));
    }),
    { numRuns: 200 },
  );
  t.pass();
});

// --- the map and a transaction's buffered writes -----------------------------

test('a point map keeps five keys of one hash apart through any sets and drops', (t) => {
  const keys = [...GROUP, ...OTHER_GROUP, Buffer.from('x')];
  const operation = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.nat(keys.length - 1), value: fc.nat(9) }),
    fc.record({ op: fc.constant('drop' as const), keys: fc.subarray([...keys.keys()]) }),
  );
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 40 }), (operations) => {
      const map = new PointMap<{ key: Buffer; value: number }>();
      const model = new Map<string, number>();
      for (const step of operations) {
        if (step.op === 'set') {
          // A fresh buffer each time, as a transaction copies every key it is given.
          map.set({ key: Buffer.from(keys[step.key] as Buffer), value: step.value });
          model.set(latin1(keys[step.key] as Buffer), step.value);
        } else {
          const dropped = new Set(step.keys.map((i) => latin1(keys[i] as Buffer)));
          map.deleteWhere((entry) => dropped.has(latin1(entry.key)));
          for (const key of dropped) model.delete(key);
        }
        if (map.size !== model.size) return false;
        for (const key of keys) {
          if (map.get(key)?.value !== model.get(latin1(key))) return false;
          if (map.holds(latin1(key), keyHashOfBytes(key)) !== model.has(latin1(key))) return false;
        }
        const listed = [...map.values()].map((entry) => `${latin1(entry.key)}=${entry.value}`).sort();
        if (listed.join('|') !== [...model].map(([key, value]) => `${key}=${value}`).sort().join('|')) return false;
        const hashes = new Set(map.hashes());
        for (const key of model.keys()) if (!hashes.has(keyHash(key))) return false;
      }
      return true;
    }),
    { numRuns: 400 },
  );
  t.pass();
});

type Model = { kind: 'set'; value: Buffer } | { kind: 'clear' } | { kind: 'add'; operand: bigint };

test('buffered writes of keys that share a hash read as a map by key string would', (t) => {
  const keys = [...GROUP, ...OTHER_GROUP];
  const sorted = [...keys].sort(Buffer.compare);
  const operation = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.nat(keys.length - 1), value: fc.nat(99) }),
    fc.record({ op: fc.constant('clear' as const), key: fc.nat(keys.length - 1) }),
    fc.record({ op: fc.constant('add' as const), key: fc.nat(keys.length - 1), operand: fc.bigInt({ min: 0n, max: 1000n }) }),
    fc.record({ op: fc.constant('clearRange' as const), from: fc.nat(keys.length - 1), span: fc.nat(3) }),
  );
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 30 }), (operations) => {
      const writes = new PendingWrites();
      const model = new Map<string, Model>();
      const ranges: Array<[Buffer, Buffer]> = [];
      const cleared = (key: Buffer) => ranges.some(([s, e]) => Buffer.compare(s, key) <= 0 && Buffer.compare(key, e) < 0);
      for (const step of operations) {
        if (step.op === 'set') {
          const value = Buffer.from(String(step.value));
          writes.set(Buffer.from(keys[step.key] as Buffer), value);
          model.set(latin1(keys[step.key] as Buffer), { kind: 'set', value });
        } else if (step.op === 'clear') {
          writes.clear(Buffer.from(keys[step.key] as Buffer));
          model.set(latin1(keys[step.key] as Buffer), { kind: 'clear' });
        } else if (step.op === 'add') {
          const key = keys[step.key] as Buffer;
          writes.add(Buffer.from(key), step.operand);
          const previous = model.get(latin1(key));
          let next: Model;
          if (previous === undefined) next = cleared(key) ? { kind: 'set', value: applyAdd(undefined, step.operand) } : { kind: 'add', operand: step.operand };
          else if (previous.kind === 'set') next = { kind: 'set', value: applyAdd(previous.value, step.operand) };
          else if (previous.kind === 'clear') next = { kind: 'set', value: applyAdd(undefined, step.operand) };
          else next = { kind: 'add', operand: foldOperands(previous.operand, step.operand) };
          model.set(latin1(key), next);
        } else {
          const start = sorted[step.from] as Buffer;
          const last = sorted[Math.min(step.from + step.span, sorted.length - 1)] as Buffer;
          const end = Buffer.concat([last, Buffer.of(0)]);
          writes.clearRange(Buffer.from(start), end);
          ranges.push([start, end]);
          for (const key of sorted) {
            if (Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0) model.delete(latin1(key));
          }
        }
      }
      if (writes.points.size !== model.size) return false;
      for (const key of keys) {
        const expected = model.get(latin1(key));
        const read = writes.read(key);
        if (expected === undefined) {
          if (read.found !== cleared(key)) return false;
          if (read.found && (read as { value?: Buffer }).value !== undefined) return false;
        } else if (expected.kind === 'set') {
          if (!read.found || !('value' in read) || !expected.value.equals(read.value as Buffer)) return false;
        } else if (expected.kind === 'clear') {
          if (!read.found || !('value' in read) || read.value !== undefined) return false;
        } else if (!read.found || !('addOver' in read) || read.addOver !== expected.operand) return false;
      }
      return true;
    }),
    { numRuns: 400 },
  );
  t.pass();
});

// --- through the engine -------------------------------------------------------

function openDatabase(t: { teardown(fn: () => void | Promise<void>): void }): EmbeddedDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-point-map-'));
  const db = EmbeddedDatabase.open({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test('a transaction reads its own writes of five keys of one hash, through a range clear of the first', async (t) => {
  const db = openDatabase(t);
  const [first, second, third, fourth, fifth] = GROUP as [Buffer, Buffer, Buffer, Buffer, Buffer];
  const after = (key: Buffer) => Buffer.concat([key, Buffer.of(0)]);
  await db.doTransaction(async (tx) => {
    for (const [i, key] of GROUP.entries()) tx.set(key, Buffer.from(`v${i}`));
    // The first key holds the hash's slot: clearing it hands the slot on.
    tx.clearRange(first, after(first));
    t.is(await tx.get(first), undefined);
    t.is((await tx.get(second))?.toString(), 'v1');
    tx.set(first, Buffer.from('again'));
    tx.atomicAdd(third, 1);
    tx.clear(fourth);
    t.is((await tx.get(first))?.toString(), 'again');
    t.deepEqual(await tx.get(third), applyAdd(Buffer.from('v2'), 1n));
    t.is(await tx.get(fourth), undefined);
    t.is((await tx.get(fifth))?.toString(), 'v4');
    const range = await tx.getRange(Buffer.from('job/'), Buffer.from('job0'));
    t.deepEqual(
      range.map(({ key }) => latin1(key)).sort(),
      [first, second, third, fifth].map(latin1).sort(),
    );
  });
  const stored = await db.doTransaction(async (tx) => Promise.all(GROUP.map((key) => tx.get(key))));
  t.deepEqual(
    stored.map((value) => value?.toString('latin1')),
    ['again', 'v1', applyAdd(Buffer.from('v2'), 1n).toString('latin1'), undefined, 'v4'],
  );
});

test('a watch on a key sees its own transaction write it, not a key of the same hash', async (t) => {
  const db = openDatabase(t);
  const [first, second] = GROUP as [Buffer, Buffer];
  await db.doTransaction((tx) => tx.set(second, Buffer.from('before')));
  // The watching transaction writes only the other key of the hash: the
  // watch saw 'before', so another transaction's change fires it.
  const watch = await db.doTransaction((tx) => {
    tx.set(first, Buffer.from('the other key'));
    return tx.watch(second);
  });
  let fired = false;
  void watch.promise.then(() => {
    fired = true;
  });
  await db.doTransaction((tx) => tx.set(first, Buffer.from('again')));
  await new Promise((resolve) => setImmediate(resolve));
  t.false(fired, 'a write of a key that only shares the hash fired the watch');
  await db.doTransaction((tx) => tx.set(second, Buffer.from('after')));
  t.true(await watch.promise);
});

// --- the conflict check -------------------------------------------------------

interface Txn {
  ops: Array<{ op: 'set' | 'clear'; key: number } | { op: 'clearRange'; from: number; span: number }>;
  fillers: number;
}

test('the conflict check finds exactly the newer batches that wrote a key read, on keys of one hash, with filters, the index and compaction', (t) => {
  const pool = [...GROUP, ...OTHER_GROUP, Buffer.from('x')];
  const sorted = [...pool].sort(Buffer.compare);
  const txn = fc.record({
    ops: fc.array(
      fc.oneof(
        fc.record({ op: fc.constantFrom('set' as const, 'clear' as const), key: fc.nat(pool.length - 1) }),
        fc.record({ op: fc.constant('clearRange' as const), from: fc.nat(pool.length - 1), span: fc.nat(2) }),
      ),
      { maxLength: 6 },
    ),
    // Enough keys for a filter, now and then.
    fillers: fc.oneof(fc.constant(0), fc.constant(FILTER_MIN_KEYS + 3)),
  });
  const batch = fc.record({ txns: fc.array(txn, { minLength: 1, maxLength: 12 }), compact: fc.boolean() });
  // What the runs covered: not a vacuous model.
  let conflictsFound = 0;
  let runsPastDirectLookups = 0;
  let collidedReadsConflicting = 0;
  fc.assert(
    fc.property(fc.array(batch, { minLength: 1, maxLength: 6 }), fc.array(fc.subarray([...pool.keys()]), { maxLength: 8 }), (batches, reads) => {
      const log = new ConflictLog(0);
      /** Per batch: its version and the keys (latin1) it wrote. */
      const written: Array<{ version: number; keys: Set<string> }> = [];
      batches.forEach((spec, b) => {
        const version = (b + 1) * 10;
        const recorded = log.open(version);
        const keys = new Set<string>();
        spec.txns.forEach((txnSpec: Txn, n) => {
          const writes = new PendingWrites();
          const points = new Set<string>();
          const ranges: Array<[Buffer, Buffer]> = [];
          for (let f = 0; f < txnSpec.fillers; f++) {
            const filler = Buffer.from(`filler/${b}/${n}/${f}`);
            writes.set(filler, Buffer.from('v'));
            points.add(latin1(filler));
          }
          for (const step of txnSpec.ops) {
            if (step.op === 'clearRange') {
              const start = sorted[step.from] as Buffer;
              const end = Buffer.concat([sorted[Math.min(step.from + step.span, sorted.length - 1)] as Buffer, Buffer.of(0)]);
              writes.clearRange(Buffer.from(start), end);
              ranges.push([start, end]);
              for (const key of [...points]) {
                const bytes = Buffer.from(key, 'latin1');
                if (Buffer.compare(start, bytes) <= 0 && Buffer.compare(bytes, end) < 0) points.delete(key);
              }
            } else {
              const key = Buffer.from(pool[step.key] as Buffer);
              if (step.op === 'set') writes.set(key, Buffer.from('v'));
              else writes.clear(key);
              points.add(latin1(key));
            }
          }
          log.recordPoints(recorded, writes.points);
          for (const [start, end] of writes.clears) log.recordRange(recorded, start, end);
          for (const key of points) keys.add(key);
          for (const key of pool) if (ranges.some(([s, e]) => Buffer.compare(s, key) <= 0 && Buffer.compare(key, e) < 0)) keys.add(latin1(key));
        });
        recorded.seal();
        if (spec.compact) log.compact(recorded);
        written.push({ version, keys });
      });
      // Past 32 write sets newer than a read version, the check uses the key index.
      if (batches.reduce((sum, spec) => sum + spec.txns.length, 0) > 32) runsPastDirectLookups++;
      for (const readSet of reads) {
        const readKeys = readSet.map((i) => latin1(pool[i] as Buffer));
        for (let readVersion = 0; readVersion <= batches.length * 10; readVersion += 5) {
          const expected = written.some(({ version, keys }) => version > readVersion && readKeys.some((key) => keys.has(key)));
          if (log.conflicts(readVersion, readKeys, []) !== expected) return false;
          if (expected) {
            conflictsFound++;
            if (readKeys.length === 1 && GROUP.slice(1).some((key) => latin1(key) === readKeys[0])) collidedReadsConflicting++;
          }
        }
      }
      return true;
    }),
    { numRuns: 150 },
  );
  t.true(conflictsFound > 0 && runsPastDirectLookups > 0 && collidedReadsConflicting > 0, `${conflictsFound} ${runsPastDirectLookups} ${collidedReadsConflicting}`);
});
