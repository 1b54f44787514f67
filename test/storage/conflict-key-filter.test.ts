// The conflict check skips a transaction's write map for the keys its
// filter rules out (key-filter.ts). A filter may answer "maybe" for a key it
// never saw, never "no" for one it did: these tests pin that down for the
// shapes that matter, large write maps (where the filter is used) with keys
// that share their tails or differ only in their first bytes, checked
// against a plain model of every batch's writes.

import test from 'ava';
import fc from 'fast-check';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { FILTER_MIN_KEYS, KeyFilter, keyHash, keyHashOfBytes } from '../../packages/core/src/storage/embedded/key-filter.js';

/** Keys built to collide in the filter's hash: a varying head over a few shared tails, and ids at the end. */
const keyArb = fc.oneof(
  fc.tuple(fc.constantFrom('a', 'b', 'c', '\x00', '\xff'), fc.constantFrom('/job/x', '/job/y', '/tail-shared-by-many')).map(([head, tail]) => head + tail),
  fc.tuple(fc.constantFrom('jobs/', 'pending/'), fc.nat(400)).map(([prefix, id]) => `${prefix}${id}`),
  fc.string({ unit: fc.constantFrom('a', 'b', '\x00', '\xff'), minLength: 0, maxLength: 20 }),
);

test('a key filter never rules out a key it holds, whatever the keys share', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 300 }), (keys) => {
      const filter = new KeyFilter(keys.length, keys);
      return keys.every((key) => filter.mayHave(keyHash(key)));
    }),
  );
  t.pass();
});

test("a key's hash is the same from its bytes and from its latin1 string", (t) => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => keyHashOfBytes(bytes) === keyHash(Buffer.from(bytes).toString('latin1'))));
  t.pass();
});

test('a key filter rules out most keys it does not hold (it saves the map lookup)', (t) => {
  const held = Array.from({ length: 500 }, (_, i) => `subspace/job/${i}`);
  const filter = new KeyFilter(held.length, held);
  const others = Array.from({ length: 5_000 }, (_, i) => `subspace/job/${i + 1_000}`);
  const maybes = others.filter((key) => filter.mayHave(keyHash(key))).length;
  t.true(maybes < others.length * 0.02, `${maybes} of ${others.length} keys not held were "maybe"`);
});

test('a read conflicts with a large write map of a later batch exactly when the map holds one of the keys read', (t) => {
  let conflicts = 0;
  fc.assert(
    fc.property(
      fc.array(fc.uniqueArray(keyArb, { minLength: 0, maxLength: 120 }), { minLength: 1, maxLength: 4 }),
      fc.uniqueArray(keyArb, { minLength: 1, maxLength: 60 }),
      fc.array(keyArb, { maxLength: 40 }),
      (maps, reads, extras) => {
        const log = new ConflictLog(0);
        const batch = log.open(10);
        const written = new Set<string>();
        for (const keys of maps) {
          log.recordPoints(batch, new Map(keys.map((key) => [key, { key: Buffer.from(key, 'latin1') }])));
          for (const key of keys) written.add(key);
        }
        extras.forEach((key, i) => {
          // As the pipeline records stamped keys (no string), or with the string at hand.
          if (i % 2 === 0) log.recordKey(batch, Buffer.from(key, 'latin1'));
          else log.recordKey(batch, Buffer.from(key, 'latin1'), key);
          written.add(key);
        });
        const expected = reads.some((key) => written.has(key));
        if (expected) conflicts++;
        // Twice: the second check uses the filters the first one built.
        return log.conflicts(5, reads, []) === expected && log.conflicts(5, reads, []) === expected;
      },
    ),
    { numRuns: 300 },
  );
  t.true(conflicts > 0);
});

test('a write map that joins a batch after a check of it is checked too, with a filter of its own', (t) => {
  const log = new ConflictLog(0);
  const batch = log.open(10);
  const first = Array.from({ length: FILTER_MIN_KEYS * 4 }, (_, i) => `job/${i}`);
  log.recordPoints(batch, new Map(first.map((key) => [key, { key: Buffer.from(key, 'latin1') }])));
  t.false(log.conflicts(5, ['job/1000'], []));
  const second = Array.from({ length: FILTER_MIN_KEYS * 4 }, (_, i) => `job/${i + 1_000}`);
  log.recordPoints(batch, new Map(second.map((key) => [key, { key: Buffer.from(key, 'latin1') }])));
  t.true(log.conflicts(5, ['job/1000'], []));
  t.true(log.conflicts(5, ['nothing', 'job/3'], []));
  t.false(log.conflicts(10, ['job/3'], []));
});

test('versionstamped and write-conflict keys that join a batch after a check of it are found by the next check', (t) => {
  const log = new ConflictLog(0);
  const batch = log.open(10);
  const record = (key: string) => log.recordKey(batch, Buffer.from(key, 'latin1'));
  record('stamped/0');
  record('stamped/1');
  t.false(log.conflicts(5, ['stamped/2'], []));
  // One more (the filter is extended), then many more (it is rebuilt at a larger size).
  record('stamped/2');
  t.true(log.conflicts(5, ['stamped/2'], []));
  for (let i = 3; i < 200; i++) {
    record(`stamped/${i}`);
    t.true(log.conflicts(5, ['other', `stamped/${i}`], []), `stamped/${i}`);
  }
  t.false(log.conflicts(5, ['stamped/200', 'stamped/-1'], []));
});
