// A snapshot's `collect` (the page reader behind getRange) must return
// exactly what its generic `range` yields, limited: the same keys, values
// and order, forwards and backwards, across the empty key, keys at the
// 1,900-byte edge, and long keys sharing buckets, with bounds of any length.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type KeyChange, LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import type { KeyValue } from '@jobtree/core';

const PREFIX = 1_900;

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function keyFrom(next: () => number): Buffer {
  const tail = Buffer.from(Array.from({ length: Math.floor(next() * 3) }, () => 0x61 + Math.floor(next() * 3)));
  switch (Math.floor(next() * 5)) {
    case 0:
      return tail;
    case 1:
      // At the edge: 1,899 to 1,901 bytes.
      return Buffer.concat([Buffer.alloc(PREFIX - 1 + Math.floor(next() * 3), 0x61), tail]).subarray(0, PREFIX - 1 + Math.floor(next() * 3));
    default:
      // Long keys in one of two buckets.
      return Buffer.concat([Buffer.alloc(PREFIX, next() < 0.5 ? 0x61 : 0x62), Buffer.of(0x61 + Math.floor(next() * 3)), tail]);
  }
}

const show = (entries: KeyValue[]) => entries.map((e) => `${e.key.length}:${e.key.subarray(-4).toString('hex')}=${e.value.toString()}`);

test('collect returns what range yields, limited, for random stores and bounds', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-snapshot-collect-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LmdbStore(dir);
  t.teardown(() => store.close());
  const next = random(7);
  const changes = new Map<string, KeyChange>();
  changes.set('', { key: Buffer.alloc(0), value: Buffer.from('empty') });
  for (let i = 0; i < 120; i++) {
    const key = keyFrom(next);
    changes.set(key.toString('latin1'), { key, value: Buffer.from(`v${i}`) });
  }
  const base = store.snapshot(0).retain();
  store.writeNow(1, () => ({ changes: changes.values(), base }));
  base.release();
  const snapshot = store.snapshot(1).retain();
  t.teardown(() => snapshot.release());
  let checks = 0;
  for (let i = 0; i < 400; i++) {
    let start = next() < 0.15 ? Buffer.alloc(0) : keyFrom(next);
    let end = next() < 0.15 ? Buffer.of(0xff) : keyFrom(next);
    if (Buffer.compare(start, end) > 0) [start, end] = [end, start];
    for (const reverse of [false, true]) {
      for (const limit of [1, 2, 7, Number.POSITIVE_INFINITY]) {
        const expected: KeyValue[] = [];
        for (const entry of snapshot.range(start, end, reverse)) {
          expected.push(entry);
          if (expected.length >= limit) break;
        }
        const got: KeyValue[] = [];
        snapshot.collect(start, end, reverse, limit, got);
        if (show(got).join() !== show(expected).join()) {
          t.deepEqual(show(got), show(expected), `[${start.length}:${start.subarray(-4).toString('hex')}, ${end.length}:${end.subarray(-4).toString('hex')}) reverse ${reverse} limit ${limit}`);
          return;
        }
        checks++;
      }
    }
  }
  t.pass(`${checks} ranges agree`);
});

test("collect's pairs are the caller's own: changing one changes no other pair, and no later read", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-snapshot-collect-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LmdbStore(dir);
  t.teardown(() => store.close());
  const keys = [Buffer.from('a'), Buffer.from('b'), Buffer.concat([Buffer.alloc(PREFIX, 0x63), Buffer.from('x')]), Buffer.from('d')];
  const base = store.snapshot(0).retain();
  store.writeNow(1, () => ({ changes: keys.map((key, i) => ({ key, value: Buffer.from(`value-${i}`) })), base }));
  base.release();
  const snapshot = store.snapshot(1).retain();
  t.teardown(() => snapshot.release());
  const first: KeyValue[] = [];
  snapshot.collect(Buffer.from('a'), Buffer.from('z'), false, 10, first);
  t.is(first.length, 4);
  for (const entry of first) {
    entry.key.fill(0x7a);
    entry.value.fill(0x21);
  }
  const again: KeyValue[] = [];
  snapshot.collect(Buffer.from('a'), Buffer.from('z'), false, 10, again);
  t.deepEqual(
    again.map((entry) => entry.value.toString()),
    keys.map((_, i) => `value-${i}`),
  );
  t.deepEqual(snapshot.get(Buffer.from('b'))?.toString(), 'value-1');
});
