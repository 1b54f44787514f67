// Handed-over writes on the embedded engine: the jobs layer's way to give a
// transaction key and value buffers it never touches again, so that the
// transaction keeps them instead of copying. The public methods must still
// behave as if they copied: a caller may reuse its buffer after `set`.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type Database, FdbError, openDatabase, type Transaction } from '@jobtree/core';
import {
  clearHandedOver,
  setHandedOver,
  setVersionstampedKeyHandedOver,
  setVersionstampedValueHandedOver,
} from '../../packages/core/src/storage/fast-paths.js';

const b = (text: string) => Buffer.from(text);

async function openTemp(t: { teardown(fn: () => void | Promise<void>): void }): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-handed-over-writes-'));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

test('a buffer reused after a public set does not change the write (keys and values)', async (t) => {
  const db = await openTemp(t);
  const scratchKey = Buffer.from('k-a');
  const scratchValue = Buffer.from('v-a');
  await db.doTransaction(async (tx) => {
    tx.set(scratchKey, scratchValue);
    // The same buffers, rewritten in place for a second write.
    scratchKey.write('k-b');
    scratchValue.write('v-b');
    tx.set(scratchKey, scratchValue);
    scratchValue.write('zzz');
    t.deepEqual(await tx.get(b('k-a')), b('v-a'));
    t.deepEqual(await tx.get(b('k-b')), b('v-b'));
  });
  await db.doTransaction(async (tx) => {
    t.deepEqual(await tx.get(b('k-a')), b('v-a'));
    t.deepEqual(await tx.get(b('k-b')), b('v-b'));
  });
});

test('handed-over and reused buffers in one transaction each commit their own bytes', async (t) => {
  const db = await openTemp(t);
  const scratch = Buffer.from('reused-0');
  await db.doTransaction((tx) => {
    for (let i = 0; i < 50; i++) {
      setHandedOver(tx, b(`owned-${i}`), b(`value-${i}`));
      scratch.write(`reused-${i % 10}`);
      tx.set(b(`plain-${i}`), scratch);
    }
    scratch.fill(0);
  });
  await db.doTransaction(async (tx) => {
    for (let i = 0; i < 50; i++) {
      t.deepEqual(await tx.get(b(`owned-${i}`)), b(`value-${i}`));
      t.deepEqual(await tx.get(b(`plain-${i}`)), b(`reused-${i % 10}`));
    }
  });
});

test('reading a handed-over write gives a copy: changing it does not change the pending write', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction(async (tx) => {
    setHandedOver(tx, b('key'), b('value'));
    const read = (await tx.get(b('key'))) as Buffer;
    read.fill(0x21);
    t.deepEqual(await tx.get(b('key')), b('value'));
  });
  t.deepEqual(await db.doTransaction((tx) => tx.get(b('key'))), b('value'));
});

test('a handed-over clear clears, and a handed-over stamped value gets the commit versionstamp', async (t) => {
  const db = await openTemp(t);
  await db.doTransaction((tx) => tx.set(b('gone'), b('x')));
  const template = Buffer.alloc(14, 0x07);
  // Wrapped: doTransaction would wait for a returned promise before committing.
  const { stamp } = await db.doTransaction((tx) => {
    clearHandedOver(tx, b('gone'));
    setVersionstampedValueHandedOver(tx, b('stamped'), template, 2);
    return { stamp: tx.getVersionstamp() };
  });
  const stored = await db.doTransaction(async (tx) => ({ gone: await tx.get(b('gone')), stamped: await tx.get(b('stamped')) }));
  t.is(stored.gone, undefined);
  t.deepEqual(stored.stamped?.subarray(2, 12), (await stamp).subarray(0, 10));
  t.deepEqual(stored.stamped?.subarray(0, 2), Buffer.alloc(2, 0x07));
  t.deepEqual(stored.stamped?.subarray(12), Buffer.alloc(2, 0x07));
});

test('a handed-over stamped key keeps its value but copies the template, which the caller reuses', async (t) => {
  const db = await openTemp(t);
  // One template for several writes, as the jobs layer keeps one per type.
  const template = Buffer.concat([b('row/'), Buffer.alloc(10)]);
  const { stamp } = await db.doTransaction((tx) => {
    setVersionstampedKeyHandedOver(tx, template, 4, b('first'));
    return { stamp: tx.getVersionstamp() };
  });
  t.deepEqual(template, Buffer.concat([b('row/'), Buffer.alloc(10)]));
  await db.doTransaction((tx) => setVersionstampedKeyHandedOver(tx, template, 4, b('second')));
  const rows = await db.doTransaction((tx) => tx.getRange(b('row/'), b('row0')));
  t.deepEqual(
    rows.map((row) => row.value.toString()),
    ['first', 'second'],
  );
  t.deepEqual(rows[0]?.key, Buffer.concat([b('row/'), (await stamp).subarray(0, 10)]));
});

test('handed-over writes check their arguments like the public methods', async (t) => {
  const db = await openTemp(t);
  const system = await t.throwsAsync(db.doTransaction((tx) => setHandedOver(tx, Buffer.from([0xff, 1]), b('v'))));
  t.true(FdbError.is(system, 'key_outside_legal_range'));
  const short = await t.throwsAsync(db.doTransaction((tx) => setVersionstampedValueHandedOver(tx, b('k'), Buffer.alloc(4), 0)));
  t.true(FdbError.is(short, 'client_invalid_operation'));
});

test('on a transaction without the internal methods, handed-over writes use the public ones', (t) => {
  const calls: string[] = [];
  const tx = {
    set: (key: Buffer, value: Buffer) => calls.push(`set ${key} ${value}`),
    clear: (key: Buffer) => calls.push(`clear ${key}`),
    setVersionstampedValue: (key: Buffer, value: Buffer, offset: number) => calls.push(`stamped ${key} ${value} ${offset}`),
    setVersionstampedKey: (template: Buffer, offset: number, value: Buffer) => calls.push(`stamped-key ${template} ${offset} ${value}`),
  } as unknown as Transaction;
  setHandedOver(tx, b('a'), b('1'));
  clearHandedOver(tx, b('b'));
  setVersionstampedValueHandedOver(tx, b('c'), b('template'), 3);
  setVersionstampedKeyHandedOver(tx, b('key-template'), 2, b('d'));
  t.deepEqual(calls, ['set a 1', 'clear b', 'stamped c template 3', 'stamped-key key-template 2 d']);
});
