import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, openDatabase } from '@jobtree/core';

const b = (s: string) => Buffer.from(s);

test('embedded engine sets, reads back, conflicts and survives reopen', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-smoke-'));
  try {
    let db = await openDatabase({ path: dir });
    await db.doTransaction((tx) => {
      tx.set(b('a'), b('1'));
      tx.set(b('b'), b('2'));
    });
    t.is(String(await db.doTransaction((tx) => tx.get(b('a')))), '1');
    const range = await db.doTransaction((tx) => tx.getRange(b('a'), b('z')));
    t.deepEqual(range.map((e) => `${e.key}=${e.value}`), ['a=1', 'b=2']);
    // two concurrent read-modify-writes of one key: one must retry
    let attempts = 0;
    await Promise.all(
      [1, 2].map(() =>
        db.doTransaction(async (tx) => {
          attempts++;
          const v = Number(String((await tx.get(b('n'))) ?? '0'));
          tx.set(b('n'), b(String(v + 1)));
        }),
      ),
    );
    t.is(String(await db.doTransaction((tx) => tx.get(b('n')))), '2');
    t.true(attempts >= 3);
    await db.close();
    db = await openDatabase({ path: dir });
    t.is(String(await db.doTransaction((tx) => tx.get(b('b')))), '2');
    const err = await t.throwsAsync(db.doTransaction((tx) => tx.get(Buffer.of(0xff))));
    t.true(err instanceof FdbError);
    await db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
