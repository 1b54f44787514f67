// Range reads straight from a snapshot (no buffered writes in the range) fill
// their page from lmdb without a generator: pages of every limit, forwards
// and reversed, over short keys, long keys sharing buckets and the empty key,
// must match the sorted model.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openDatabase } from '@jobtree/core';

const b = (text: string) => Buffer.from(text);
const long = (head: string, tail: string) => Buffer.concat([b(head), Buffer.alloc(1_950, 0x62), b(tail)]);

test('range pages of every limit, forwards and reversed, match the sorted keys, long keys and the empty key included', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-range-pages-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = await openDatabase({ path: dir });
  const keys = [
    Buffer.alloc(0),
    b('a'),
    b('b'),
    long('b', '1'),
    long('b', '2'),
    long('b', '3'),
    b('c'),
    long('c', '1'),
    b('d'),
  ];
  await db.doTransaction((tx) => {
    for (const [i, key] of keys.entries()) tx.set(key, b(`v${i}`));
  });
  const sorted = [...keys].sort(Buffer.compare);
  const bounds: Array<[Buffer, Buffer]> = [
    [Buffer.alloc(0), b('\xff')],
    [b('a'), b('e')],
    [b('b'), b('c')],
    [long('b', '2'), b('d')],
    [b('b'), long('b', '3')],
    [long('b', '1'), long('b', '2')],
  ];
  for (const [start, end] of bounds) {
    const inRange = sorted.filter((key) => Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0);
    for (const reverse of [false, true]) {
      const expected = reverse ? [...inRange].reverse() : inRange;
      for (let limit = 1; limit <= expected.length + 1; limit++) {
        const page = await db.doTransaction((tx) => tx.getRange(start, end, { limit, reverse }));
        const what = `${start.length}:${start.subarray(0, 1)} .. ${end.length}:${end.subarray(0, 1)}, limit ${limit}${reverse ? ', reversed' : ''}`;
        t.deepEqual(
          page.map((entry) => entry.key),
          expected.slice(0, limit),
          what,
        );
        for (const entry of page) t.deepEqual(entry.value, b(`v${keys.findIndex((key) => key.equals(entry.key))}`), what);
      }
    }
  }
  await db.close();
});
