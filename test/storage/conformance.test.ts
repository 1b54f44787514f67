// The storage contract (docs/architecture.md), run against every backend in
// backends.ts. Each case gets a fresh, empty database.

import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { type Database, FdbError, FdbErrorCode, type KeyValue, type Transaction, type Watch } from '@jobtree/core';
import { FOUNDATIONDB_KEY_LIMIT, type StorageBackend, backends } from './backends.js';

const b = (text: string) => Buffer.from(text);
const text = (value: Buffer | undefined) => (value === undefined ? undefined : value.toString());
const pairs = (entries: KeyValue[]) => entries.map((e) => `${e.key}=${e.value}`);
/** Long keys shortened to prefix + length, so failures stay readable. */
const short = (key: string) => (key.length > 12 ? `${key.slice(0, 4)}…${key.slice(-4)}(${key.length})` : key);
const i64 = (value: Buffer | undefined) => (value === undefined ? undefined : value.readBigInt64LE());

/** Whether `promise` settles within `ms` (the embedded engine fires watches before the commit resolves). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function expectFdbError(t: ExecutionContext, run: Promise<unknown> | (() => unknown), code: number): Promise<void> {
  try {
    if (typeof run === 'function') await run();
    else await run;
  } catch (error) {
    t.true(error instanceof FdbError, `expected an FdbError, got ${String(error)}`);
    t.is((error as FdbError).code, code, (error as Error).message);
    return;
  }
  t.fail(`expected FdbError ${code}, nothing was thrown`);
}

const once = { retryLimit: 0 };

async function put(db: Database, entries: Record<string, string>): Promise<void> {
  await db.doTransaction((tx) => {
    for (const [key, value] of Object.entries(entries)) tx.set(b(key), b(value));
  });
}

async function read(db: Database, key: string): Promise<string | undefined> {
  return text(await db.doTransaction((tx) => tx.get(b(key))));
}

/** A case gets a fresh database and the backend it came from (for limits that differ by backend). */
type Case = (t: ExecutionContext, db: Database, backend: StorageBackend) => Promise<void>;
const cases: Array<[string, Case]> = [];
const define = (title: string, run: Case) => cases.push([title, run]);

// ------------------------------------------------------------------ basics

define('get of a missing key resolves undefined', async (t, db) => {
  t.is(await db.doTransaction((tx) => tx.get(b('missing'))), undefined);
});

define('a committed set is read back by a later transaction, as a Buffer', async (t, db) => {
  await db.doTransaction((tx) => tx.set(new Uint8Array([1, 2]), new Uint8Array([3, 4])));
  const value = await db.doTransaction((tx) => tx.get(Buffer.from([1, 2])));
  t.true(Buffer.isBuffer(value));
  t.deepEqual(value, Buffer.from([3, 4]));
});

define('doTransaction resolves with the body result', async (t, db) => {
  t.deepEqual(await db.doTransaction(async () => ({ answer: 42 })), { answer: 42 });
});

define('values read are copies: a later read, or changing one, leaves the others and the store alone', async (t, db) => {
  await put(db, { a: 'first', b: 'second' });
  const [a, bValue, again] = await db.doTransaction(async (tx) => [await tx.get(b('a')), await tx.get(b('b')), await tx.get(b('a'))]);
  t.is(text(a), 'first');
  t.is(text(bValue), 'second');
  a?.fill(0x7a);
  t.is(text(again), 'first');
  t.is(await read(db, 'a'), 'first');
});

define('clear removes one key', async (t, db) => {
  await put(db, { a: '1', b: '2' });
  await db.doTransaction((tx) => tx.clear(b('a')));
  t.is(await read(db, 'a'), undefined);
  t.is(await read(db, 'b'), '2');
});

define('clearRange removes start <= key < end only', async (t, db) => {
  await put(db, { a: '1', b: '2', c: '3', d: '4' });
  await db.doTransaction((tx) => tx.clearRange(b('b'), b('d')));
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b(''), b('\xfe')))), ['a=1', 'd=4']);
});

define('getRange returns start <= key < end in byte order, limited and reversed', async (t, db) => {
  await put(db, { b: '2', a: '1', d: '4', c: '3', ab: '5' });
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('d')))), ['a=1', 'ab=5', 'b=2', 'c=3']);
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('d'), { limit: 2 }))), ['a=1', 'ab=5']);
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('d'), { reverse: true }))), [
    'c=3',
    'b=2',
    'ab=5',
    'a=1',
  ]);
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('d'), { reverse: true, limit: 1 }))), ['c=3']);
  t.deepEqual(await db.doTransaction((tx) => tx.getRange(b('x'), b('x'))), []);
});

define('the empty key and binary keys order like bytes', async (t, db) => {
  await db.doTransaction((tx) => {
    tx.set(Buffer.alloc(0), b('empty'));
    tx.set(Buffer.from([0x00]), b('zero'));
    tx.set(Buffer.from([0xfe, 0xff]), b('high'));
  });
  const all = await db.doTransaction((tx) => tx.getRange(Buffer.alloc(0), Buffer.from([0xff])));
  t.deepEqual(
    all.map((e) => e.key.toString('hex')),
    ['', '00', 'feff'],
  );
  t.is(text(await db.doTransaction((tx) => tx.get(Buffer.alloc(0)))), 'empty');
  const reversed = await db.doTransaction((tx) => tx.getRange(Buffer.alloc(0), Buffer.from([0xff]), { reverse: true }));
  t.deepEqual(
    reversed.map((e) => e.key.toString('hex')),
    ['feff', '00', ''],
  );
});

define('a written value is copied: mutating the caller buffer afterwards changes nothing', async (t, db) => {
  const value = b('before');
  await db.doTransaction((tx) => {
    tx.set(b('k'), value);
    value.write('AFTER!');
  });
  t.is(await read(db, 'k'), 'before');
});

// ------------------------------------------------------------------ read-your-writes

define('changing a buffer a read returned does not change the stored or pending value', async (t, db) => {
  await put(db, { stored: 'abc' });
  await db.doTransaction(async (tx) => {
    (await tx.get(b('stored')))?.write('XYZ');
    tx.set(b('pending'), b('def'));
    (await tx.get(b('pending')))?.write('XYZ');
    for (const { key, value } of await tx.getRange(b('a'), b('z'))) {
      key.write('!');
      value.write('!');
    }
    t.is(text(await tx.get(b('pending'))), 'def');
    t.is(text(await tx.get(b('stored'))), 'abc');
  });
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('z')))), ['pending=def', 'stored=abc']);
});

define('reads see the transaction own sets and clears', async (t, db) => {
  await put(db, { a: 'old', gone: 'x' });
  await db.doTransaction(async (tx) => {
    tx.set(b('a'), b('new'));
    tx.clear(b('gone'));
    t.is(text(await tx.get(b('a'))), 'new');
    t.is(await tx.get(b('gone')), undefined);
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'))), ['a=new']);
  });
});

define('clearRange hides snapshot keys from the transaction own reads, later sets show again', async (t, db) => {
  await put(db, { a: '1', b: '2', c: '3', d: '4' });
  await db.doTransaction(async (tx) => {
    tx.clearRange(b('a'), b('c'));
    t.is(await tx.get(b('a')), undefined);
    t.is(text(await tx.get(b('c'))), '3');
    tx.set(b('b'), b('again'));
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'))), ['b=again', 'c=3', 'd=4']);
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'), { reverse: true, limit: 2 })), ['d=4', 'c=3']);
  });
  t.deepEqual(pairs(await db.doTransaction((tx) => tx.getRange(b('a'), b('z')))), ['b=again', 'c=3', 'd=4']);
});

define('range reads merge buffered sets into the snapshot in key order, with limit', async (t, db) => {
  await put(db, { b: 's', d: 's', f: 's' });
  await db.doTransaction(async (tx) => {
    tx.set(b('a'), b('w'));
    tx.set(b('d'), b('w'));
    tx.set(b('e'), b('w'));
    tx.clear(b('f'));
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'))), ['a=w', 'b=s', 'd=w', 'e=w']);
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'), { limit: 3 })), ['a=w', 'b=s', 'd=w']);
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'), { reverse: true, limit: 3 })), ['e=w', 'd=w', 'b=s']);
  });
});

// ------------------------------------------------------------------ atomic add

define('atomicAdd adds little-endian 64-bit integers, treating a missing key as zero', async (t, db) => {
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 5));
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), -2));
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 10n));
  const value = await db.doTransaction((tx) => tx.get(b('n')));
  t.is(value?.length, 8);
  t.is(i64(value), 13n);
});

define('atomicAdd is visible to the transaction own reads, over the stored value', async (t, db) => {
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 100));
  await db.doTransaction(async (tx) => {
    tx.atomicAdd(b('n'), 1);
    tx.atomicAdd(b('n'), 2);
    t.is(i64(await tx.get(b('n'))), 103n);
    tx.set(b('m'), Buffer.alloc(8));
    tx.atomicAdd(b('m'), 7);
    t.is(i64(await tx.get(b('m'))), 7n);
  });
  t.is(i64(await db.doTransaction((tx) => tx.get(b('n')))), 103n);
});

define('concurrent atomicAdds to one key never conflict and all count', async (t, db) => {
  let attempts = 0;
  await Promise.all(
    Array.from({ length: 20 }, () =>
      db.doTransaction((tx) => {
        attempts++;
        tx.atomicAdd(b('counter'), 1);
      }, once),
    ),
  );
  t.is(attempts, 20);
  t.is(i64(await db.doTransaction((tx) => tx.get(b('counter')))), 20n);
});

// ------------------------------------------------------------------ isolation and conflicts

define('a transaction does not see a commit made after its read version', async (t, db) => {
  await put(db, { k: 'v1' });
  await db.doTransaction(async (tx) => {
    t.is(text(await tx.get(b('k'))), 'v1');
    await put(db, { k: 'v2', other: 'x' });
    t.is(text(await tx.snapshot().get(b('k'))), 'v1');
    t.is(await tx.snapshot().get(b('other')), undefined);
    t.deepEqual(pairs(await tx.snapshot().getRange(b('a'), b('z'))), ['k=v1']);
  });
  t.is(await read(db, 'k'), 'v2');
});

define('a point read conflicts with a newer write of that key (1020)', async (t, db) => {
  await put(db, { k: '1' });
  const run = db.doTransaction(async (tx) => {
    await tx.get(b('k'));
    await put(db, { k: '2' });
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
  t.is(await read(db, 'out'), undefined, 'a failed commit writes nothing');
});

define('a point read does not conflict with a newer write of another key', async (t, db) => {
  await db.doTransaction(async (tx) => {
    await tx.get(b('k'));
    await put(db, { other: '2' });
    tx.set(b('out'), b('x'));
  }, once);
  t.is(await read(db, 'out'), 'x');
});

define('a range read conflicts with an insert inside the range', async (t, db) => {
  await put(db, { a: '1', c: '3' });
  const run = db.doTransaction(async (tx) => {
    await tx.getRange(b('a'), b('d'));
    await put(db, { b: 'new' });
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('a range read does not conflict with an insert outside the range', async (t, db) => {
  await put(db, { a: '1', c: '3' });
  await db.doTransaction(async (tx) => {
    await tx.getRange(b('a'), b('d'));
    await put(db, { d: 'at-end', '0': 'before' });
    tx.set(b('out'), b('x'));
  }, once);
  t.is(await read(db, 'out'), 'x');
});

define('a limited range read conflicts only up to its last returned key', async (t, db) => {
  await put(db, { a: '1', b: '2', c: '3', d: '4' });
  await db.doTransaction(async (tx) => {
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'), { limit: 2 })), ['a=1', 'b=2']);
    await put(db, { bb: 'past the last key read' });
    tx.set(b('out'), b('x'));
  }, once);
  t.is(await read(db, 'out'), 'x');
  const run = db.doTransaction(async (tx) => {
    await tx.getRange(b('a'), b('z'), { limit: 2 });
    await put(db, { ab: 'inside what was read' });
    tx.set(b('out'), b('y'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('a reverse limited range read conflicts only down to its last returned key', async (t, db) => {
  await put(db, { a: '1', b: '2', c: '3', d: '4' });
  await db.doTransaction(async (tx) => {
    t.deepEqual(pairs(await tx.getRange(b('a'), b('z'), { limit: 2, reverse: true })), ['d=4', 'c=3']);
    await put(db, { bb: 'below the last key read' });
    tx.set(b('out'), b('x'));
  }, once);
  const run = db.doTransaction(async (tx) => {
    await tx.getRange(b('a'), b('z'), { limit: 2, reverse: true });
    await put(db, { e: 'inside what was read' });
    tx.set(b('out'), b('y'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('a range read conflicts with a newer clearRange that overlaps it', async (t, db) => {
  await put(db, { a: '1', m: '2' });
  const run = db.doTransaction(async (tx) => {
    await tx.getRange(b('a'), b('c'));
    await db.doTransaction((other) => other.clearRange(b('b'), b('z')));
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('a point read conflicts with a newer clearRange covering the key', async (t, db) => {
  await put(db, { k: '1' });
  const run = db.doTransaction(async (tx) => {
    await tx.get(b('k'));
    await db.doTransaction((other) => other.clearRange(b('a'), b('z')));
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('snapshot reads add no read conflicts', async (t, db) => {
  await put(db, { k: '1', a: '1' });
  await db.doTransaction(async (tx) => {
    await tx.snapshot().get(b('k'));
    await tx.snapshot().getRange(b('a'), b('z'));
    await put(db, { k: '2', b: '2' });
    tx.set(b('out'), b('x'));
  }, once);
  t.is(await read(db, 'out'), 'x');
});

define('blind writes never conflict, the later commit wins', async (t, db) => {
  await db.doTransaction(async (tx) => {
    tx.set(b('k'), b('first'));
    await put(db, { k: 'second' });
  }, once);
  t.is(await read(db, 'k'), 'first');
});

define('addReadConflictKey makes a write-only transaction conflict', async (t, db) => {
  const run = db.doTransaction(async (tx) => {
    tx.addReadConflictKey(b('guard'));
    await put(db, { guard: 'changed' });
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('addReadConflictRange conflicts with a write inside the range only', async (t, db) => {
  await db.doTransaction(async (tx) => {
    tx.addReadConflictRange(b('g'), b('h'));
    await put(db, { h: 'outside' });
    tx.set(b('out'), b('x'));
  }, once);
  const run = db.doTransaction(async (tx) => {
    tx.addReadConflictRange(b('g'), b('h'));
    await put(db, { g5: 'inside' });
    tx.set(b('out'), b('y'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
});

define('addWriteConflictKey makes readers of that key conflict without writing it', async (t, db) => {
  const run = db.doTransaction(async (tx) => {
    await tx.get(b('lock'));
    await db.doTransaction((other) => {
      other.addWriteConflictKey(b('lock'));
      other.set(b('elsewhere'), b('1'));
    });
    tx.set(b('out'), b('x'));
  }, once);
  await expectFdbError(t, run, FdbErrorCode.not_committed);
  t.is(await read(db, 'lock'), undefined);
});

define('reads of keys the transaction wrote itself add no conflict', async (t, db) => {
  await db.doTransaction(async (tx) => {
    tx.set(b('mine'), b('1'));
    t.is(text(await tx.get(b('mine'))), '1');
    await put(db, { mine: 'theirs' });
  }, once);
  t.is(await read(db, 'mine'), '1');
});

// ------------------------------------------------------------------ versionstamps

function stampedKeyTemplate(prefix: string): Buffer {
  return Buffer.concat([b(prefix), Buffer.alloc(10)]);
}

define('versionstamped keys sort in commit order, and getVersionstamp matches the key', async (t, db) => {
  const stamps: Buffer[] = [];
  for (let i = 0; i < 3; i++) {
    // Wrapped: returning the promise itself would make doTransaction wait for it before committing.
    const { stamp } = await db.doTransaction((tx) => {
      tx.setVersionstampedKey(stampedKeyTemplate('log/'), 4, b(`entry${i}`));
      return { stamp: tx.getVersionstamp() };
    });
    stamps.push(await stamp);
  }
  const log = await db.doTransaction((tx) => tx.getRange(b('log/'), b('log0')));
  t.deepEqual(
    log.map((e) => e.value.toString()),
    ['entry0', 'entry1', 'entry2'],
  );
  t.deepEqual(
    log.map((e) => e.key.subarray(4)),
    stamps,
  );
  for (const stamp of stamps) t.is(stamp.length, 10);
  t.true(Buffer.compare(stamps[0] as Buffer, stamps[1] as Buffer) < 0);
});

define('concurrent commits get distinct versionstamps that order like their keys', async (t, db) => {
  const stamps = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      db
        .doTransaction((tx) => {
          tx.setVersionstampedKey(stampedKeyTemplate('c/'), 2, b(String(i)));
          return { stamp: tx.getVersionstamp() };
        })
        .then(({ stamp }) => stamp),
    ),
  );
  const unique = new Set(stamps.map((s) => s.toString('hex')));
  t.is(unique.size, 30);
  const log = await db.doTransaction((tx) => tx.getRange(b('c/'), b('c0')));
  t.is(log.length, 30);
  const sorted = [...stamps].sort(Buffer.compare);
  t.deepEqual(
    log.map((e) => e.key.subarray(2)),
    sorted,
  );
});

define('setVersionstampedValue writes the stamp into the value', async (t, db) => {
  const { stamp: stampPromise } = await db.doTransaction((tx) => {
    tx.setVersionstampedValue(b('v'), Buffer.concat([b('at:'), Buffer.alloc(10), b('!')]), 3);
    return { stamp: tx.getVersionstamp() };
  });
  const stamp = await stampPromise;
  const value = await db.doTransaction((tx) => tx.get(b('v')));
  t.deepEqual(value, Buffer.concat([b('at:'), stamp, b('!')]));
});

define('reading a key this transaction versionstamped fails with accessed_unreadable (1036)', async (t, db) => {
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      tx.setVersionstampedValue(b('v'), Buffer.alloc(10), 0);
      await tx.get(b('v'));
    }, once),
    FdbErrorCode.accessed_unreadable,
  );
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      tx.setVersionstampedKey(stampedKeyTemplate('q/'), 2, b('x'));
      await tx.getRange(b('q/'), b('q0'));
    }, once),
    FdbErrorCode.accessed_unreadable,
  );
  t.deepEqual(await db.doTransaction((tx) => tx.getRange(b('q/'), b('q0'))), []);
});

define('a clearRange after setVersionstampedKey in the same transaction clears the stamped key', async (t, db) => {
  await db.doTransaction((tx) => {
    tx.setVersionstampedKey(stampedKeyTemplate('gone/'), 5, b('x'));
    tx.setVersionstampedKey(stampedKeyTemplate('kept/'), 5, b('y'));
    tx.clearRange(b('gone/'), b('gone0'));
  });
  const all = await db.doTransaction((tx) => tx.getRange(b('a'), b('z')));
  t.deepEqual(
    all.map((e) => e.value.toString()),
    ['y'],
  );
});

/** `stamp` with its 8-byte commit version moved `by` versions (about a microsecond each on both backends). */
function stampPlus(stamp: Buffer, by: bigint): Buffer {
  const moved = Buffer.from(stamp);
  moved.writeBigUInt64BE(stamp.readBigUInt64BE(0) + by, 0);
  return moved;
}

define('mutations apply in call order: a clearRange that turns out to hold a stamped key clears it only if it came after', async (t, db) => {
  // FoundationDB's commit proxy fills in the stamp of a versionstamped key in
  // place, in the transaction's mutation list, so a later clear of a range
  // that holds the final key removes it, and an earlier one does not.
  const { stamp: before } = await db.doTransaction((tx) => {
    tx.set(b('marker'), b('1'));
    return { stamp: tx.getVersionstamp() };
  });
  const now = await before;
  const hourAhead = stampPlus(now, 3_600_000_000n);
  const at = (prefix: string, stamp: Buffer) => Buffer.concat([b(prefix), stamp]);
  await db.doTransaction((tx) => {
    tx.setVersionstampedKey(stampedKeyTemplate('late/'), 5, b('cleared by a later clearRange'));
    tx.clearRange(at('late/', Buffer.alloc(10)), at('late/', hourAhead));
    tx.clearRange(at('early/', Buffer.alloc(10)), at('early/', hourAhead));
    tx.setVersionstampedKey(stampedKeyTemplate('early/'), 6, b('written after the clearRange'));
    tx.setVersionstampedKey(stampedKeyTemplate('past/'), 5, b('outside the later clearRange'));
    tx.clearRange(at('past/', Buffer.alloc(10)), at('past/', now));
  });
  const values = (prefix: string) =>
    db.doTransaction(async (tx) => (await tx.getRange(b(prefix), b(`${prefix.slice(0, -1)}0`))).map((e) => e.value.toString()));
  t.deepEqual(await values('late/'), []);
  t.deepEqual(await values('early/'), ['written after the clearRange']);
  t.deepEqual(await values('past/'), ['outside the later clearRange']);
});

define('inside the transaction, a range cleared after setVersionstampedKey reads as cleared; the rest of the stamp range stays unreadable (1036)', async (t, db) => {
  // FoundationDB's read-your-writes map marks the possible keys of a
  // versionstamped key unreadable, and a later clear turns its range into a
  // plain cleared (readable) range.
  const { stamp: before } = await db.doTransaction((tx) => {
    tx.set(b('marker'), b('1'));
    return { stamp: tx.getVersionstamp() };
  });
  const now = await before;
  const hourAhead = stampPlus(now, 3_600_000_000n);
  const at = (stamp: Buffer) => Buffer.concat([b('r/'), stamp]);
  const seen = await db.doTransaction(async (tx) => {
    tx.setVersionstampedKey(stampedKeyTemplate('r/'), 2, b('x'));
    tx.clearRange(at(Buffer.alloc(10)), at(hourAhead));
    tx.set(at(stampPlus(now, 1n)), b('set after the clear'));
    return {
      range: (await tx.getRange(at(Buffer.alloc(10)), at(hourAhead))).map((e) => e.value.toString()),
      point: await tx.get(at(stampPlus(now, 2n))),
    };
  });
  t.deepEqual(seen, { range: ['set after the clear'], point: undefined });
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      tx.setVersionstampedKey(stampedKeyTemplate('r/'), 2, b('x'));
      tx.clearRange(at(Buffer.alloc(10)), at(hourAhead));
      await tx.getRange(at(hourAhead), b('r0'));
    }, once),
    FdbErrorCode.accessed_unreadable,
  );
});

define('a versionstamp offset outside the template is rejected', async (t, db) => {
  await expectFdbError(
    t,
    db.doTransaction((tx) => tx.setVersionstampedKey(Buffer.alloc(12), 3, b('x')), once),
    FdbErrorCode.client_invalid_operation,
  );
});

// ------------------------------------------------------------------ watches

define('a watch fires once another transaction changes the value', async (t, db) => {
  await put(db, { w: '1' });
  const watch = await db.doTransaction(async (tx) => {
    await tx.get(b('w'));
    return tx.watch(b('w'));
  });
  t.false(await settlesWithin(watch.promise, 50));
  await put(db, { w: '2' });
  t.true(await watch.promise);
});

define('a watch does not fire on a write of the same value, and cancel resolves false', async (t, db) => {
  await put(db, { w: 'same' });
  const watch = await db.doTransaction((tx) => tx.watch(b('w')));
  await put(db, { w: 'same' });
  t.false(await settlesWithin(watch.promise, 100));
  watch.cancel();
  t.false(await watch.promise);
  await put(db, { w: 'different' });
  t.false(await watch.promise);
});

define('a watch on a missing key fires when the key is created, not when an unrelated key changes', async (t, db) => {
  const watch = await db.doTransaction((tx) => tx.watch(b('later')));
  await put(db, { unrelated: '1' });
  t.false(await settlesWithin(watch.promise, 50));
  await put(db, { later: 'now' });
  t.true(await watch.promise);
});

define('a watch fires on a clearRange and on an atomicAdd of its key', async (t, db) => {
  await put(db, { w1: 'x', w2: 'y' });
  const [first, second] = await db.doTransaction((tx) => [tx.watch(b('w1')), tx.watch(b('w2'))]);
  await db.doTransaction((tx) => tx.clearRange(b('w1'), b('w2')));
  t.true(await first!.promise);
  t.false(await settlesWithin(second!.promise, 50));
  await db.doTransaction((tx) => tx.atomicAdd(b('w2'), 1));
  t.true(await second!.promise);
});

define('a watch fires right after commit when the value changed between the read and the commit', async (t, db) => {
  await put(db, { w: '1' });
  const watch = await db.doTransaction(async (tx) => {
    await tx.snapshot().get(b('w'));
    const created = tx.watch(b('w'));
    await put(db, { w: '2' });
    t.false(await settlesWithin(created.promise, 50), 'not armed before its transaction commits');
    return created;
  });
  t.true(await watch.promise);
});

define('a watch on a key the transaction wrote compares against the written value', async (t, db) => {
  const watch = await db.doTransaction((tx) => {
    tx.set(b('w'), b('mine'));
    return tx.watch(b('w'));
  });
  t.false(await settlesWithin(watch.promise, 50));
  await put(db, { w: 'theirs' });
  t.true(await watch.promise);
});

/** Whether `watch` fired (resolved true) within a second. */
async function firesSoon(watch: Watch): Promise<boolean> {
  return (await settlesWithin(watch.promise, 1000)) && (await watch.promise);
}

define('a watch made before any read compares with the value at the read version it takes', async (t, db) => {
  await put(db, { w: '1' });
  const watch = await db.doTransaction(async (tx) => {
    const created = tx.watch(b('w'));
    await put(db, { w: '2' });
    return created;
  });
  t.true(await firesSoon(watch));
});

define('a watch made before its transaction sets the key to another value fires at once, before the commit', async (t, db) => {
  await put(db, { w: 'before' });
  const watch = await db.doTransaction(async (tx) => {
    const created = tx.watch(b('w'));
    tx.set(b('w'), b('after'));
    t.true(await settlesWithin(created.promise, 1000), 'a change of its own transaction fires the watch before the commit');
    return created;
  });
  t.true(await watch.promise);
});

define('a watch made before its transaction sets the key to the value it had stays quiet until another change', async (t, db) => {
  await put(db, { w: 'same' });
  const watch = await db.doTransaction((tx) => {
    const created = tx.watch(b('w'));
    tx.set(b('w'), b('same'));
    return created;
  });
  t.false(await settlesWithin(watch.promise, 100));
  await put(db, { w: 'other' });
  t.true(await watch.promise);
});

define('a watch fires when its transaction sets the key to another value and back', async (t, db) => {
  await put(db, { w: 'start' });
  const watch = await db.doTransaction((tx) => {
    const created = tx.watch(b('w'));
    tx.set(b('w'), b('away'));
    tx.set(b('w'), b('start'));
    return created;
  });
  t.true(await firesSoon(watch));
});

define('a watch made before its transaction clears the key, or a range over it, fires; a watch of a missing key does not', async (t, db) => {
  await put(db, { c1: 'x', c2: 'y' });
  const [cleared, rangeCleared, missing] = await db.doTransaction((tx) => {
    const watches = [tx.watch(b('c1')), tx.watch(b('c2')), tx.watch(b('c3'))];
    tx.clear(b('c1'));
    tx.clearRange(b('c2'), b('c4'));
    return watches;
  });
  t.true(await firesSoon(cleared!));
  t.true(await firesSoon(rangeCleared!));
  t.false(await settlesWithin(missing!.promise, 100));
  await put(db, { c3: 'now' });
  t.true(await missing!.promise);
});

define('a watch made before an atomic add of its transaction fires, even when the add is of zero', async (t, db) => {
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 5));
  const [zero, one] = await db.doTransaction((tx) => {
    const watches = [tx.watch(b('n')), tx.watch(b('m'))];
    tx.atomicAdd(b('n'), 0);
    tx.atomicAdd(b('m'), 1);
    return watches;
  });
  t.true(await firesSoon(zero!));
  t.true(await firesSoon(one!));
});

define('a watch made after an atomic add of its transaction compares with the value the add leaves', async (t, db) => {
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 5));
  const watch = await db.doTransaction((tx) => {
    tx.atomicAdd(b('n'), 1);
    return tx.watch(b('n'));
  });
  t.false(await settlesWithin(watch.promise, 100));
  await db.doTransaction((tx) => tx.atomicAdd(b('n'), 1));
  t.true(await watch.promise);
});

define('a watch adds a read conflict on its key', async (t, db) => {
  await put(db, { w: '1' });
  let created: Watch | undefined;
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      await tx.snapshot().get(b('elsewhere'));
      created = tx.watch(b('w'));
      tx.set(b('out'), b('x'));
      await put(db, { w: '2' });
    }, once),
    FdbErrorCode.not_committed,
  );
  await expectFdbError(t, created!.promise, FdbErrorCode.not_committed);
  t.is(await read(db, 'out'), undefined);
});

define('a watch of a key its transaction versionstamped fails with accessed_unreadable (1036); the transaction still commits', async (t, db) => {
  const watches = await db.doTransaction((tx) => {
    tx.setVersionstampedValue(b('sv'), Buffer.alloc(10), 0);
    tx.setVersionstampedKey(stampedKeyTemplate('sk/'), 3, b('x'));
    return [tx.watch(b('sv')), tx.watch(Buffer.concat([b('sk/'), Buffer.alloc(10, 7)]))];
  });
  for (const watch of watches) await expectFdbError(t, watch.promise, FdbErrorCode.accessed_unreadable);
  t.is((await db.doTransaction((tx) => tx.get(b('sv'))))?.length, 10);
  t.is((await db.doTransaction((tx) => tx.getRange(b('sk/'), b('sk0')))).length, 1);
});

define('a watch of a transaction that fails to commit rejects with the commit error', async (t, db) => {
  await put(db, { k: '1' });
  let created: { promise: Promise<boolean> } | undefined;
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      await tx.get(b('k'));
      created = tx.watch(b('w'));
      await put(db, { k: '2' });
      tx.set(b('out'), b('x'));
    }, once),
    FdbErrorCode.not_committed,
  );
  await expectFdbError(t, created!.promise, FdbErrorCode.not_committed);
});

define('the watch of an attempt that lost a conflict rejects with not_committed; the retry returns its own armed watch', async (t, db) => {
  await put(db, { w: '1' });
  const made: Watch[] = [];
  const watch = await db.doTransaction(async (tx) => {
    const created = tx.watch(b('w'));
    made.push(created);
    tx.set(b('out'), b(String(made.length)));
    if (made.length === 1) await put(db, { w: '2' });
    return created;
  });
  t.is(made.length, 2);
  await expectFdbError(t, made[0]!.promise, FdbErrorCode.not_committed);
  t.true(watch === made[1], 'the retry returns the watch it made');
  t.false(await settlesWithin(watch.promise, 100), 'the retry read the value the conflict left');
  await put(db, { w: '3' });
  t.true(await watch.promise);
});

define('a watch its own write fired stays fired when its transaction then fails to commit', async (t, db) => {
  await put(db, { w: '1', k: '1' });
  let created: Watch | undefined;
  await expectFdbError(
    t,
    db.doTransaction(async (tx) => {
      await tx.get(b('k'));
      created = tx.watch(b('w'));
      tx.set(b('w'), b('mine'));
      await put(db, { k: '2' });
    }, once),
    FdbErrorCode.not_committed,
  );
  t.true(await created!.promise);
  t.is(await read(db, 'w'), '1');
});

define('a watch made after its transaction cleared a range over the key sees it missing and conflicts on nothing', async (t, db) => {
  await put(db, { c1: 'x' });
  const watch = await db.doTransaction(async (tx) => {
    tx.clearRange(b('c0'), b('c9'));
    const created = tx.watch(b('c1'));
    await put(db, { c1: 'y' });
    return created;
  }, once);
  t.is(await read(db, 'c1'), undefined);
  t.false(await settlesWithin(watch.promise, 100), 'the commit left the key missing, as the watch saw it');
  await put(db, { c1: 'z' });
  t.true(await watch.promise);
});

// ------------------------------------------------------------------ limits and bad input

define('keys over 10,000 bytes (less any prefix the backend adds) fail with key_too_large (2102), values over 100,000 with value_too_large (2103)', async (t, db, backend) => {
  const tooLong = backend.maxKeyBytes(db) + 1;
  t.true(tooLong <= FOUNDATIONDB_KEY_LIMIT + 1);
  await expectFdbError(t, db.doTransaction((tx) => tx.set(Buffer.alloc(tooLong, 1), b('v')), once), FdbErrorCode.key_too_large);
  await expectFdbError(t, db.doTransaction((tx) => tx.get(Buffer.alloc(tooLong, 1)), once), FdbErrorCode.key_too_large);
  await expectFdbError(t, db.doTransaction((tx) => tx.clear(Buffer.alloc(FOUNDATIONDB_KEY_LIMIT + 1, 1)), once), FdbErrorCode.key_too_large);
  await expectFdbError(t, db.doTransaction((tx) => tx.set(b('k'), Buffer.alloc(100_001)), once), FdbErrorCode.value_too_large);
  await db.doTransaction((tx) => tx.set(b('k'), Buffer.alloc(100_000, 7)));
  t.is((await db.doTransaction((tx) => tx.get(b('k'))))?.length, 100_000);
});

define('a transaction over 10 MB fails with transaction_too_large (2101) and writes nothing', async (t, db) => {
  await expectFdbError(
    t,
    db.doTransaction((tx) => {
      for (let i = 0; i < 110; i++) tx.set(b(`big/${i}`), Buffer.alloc(95_000));
    }, once),
    FdbErrorCode.transaction_too_large,
  );
  t.deepEqual(await db.doTransaction((tx) => tx.getRange(b('big/'), b('big0'), { limit: 1 })), []);
});

define('keys in the 0xff system keyspace fail with key_outside_legal_range (2004)', async (t, db) => {
  await expectFdbError(t, db.doTransaction((tx) => tx.set(Buffer.from([0xff, 1]), b('v')), once), FdbErrorCode.key_outside_legal_range);
  await expectFdbError(t, db.doTransaction((tx) => tx.get(Buffer.from([0xff])), once), FdbErrorCode.key_outside_legal_range);
});

define('an inverted range fails with inverted_range (2005)', async (t, db) => {
  await expectFdbError(t, db.doTransaction((tx) => tx.getRange(b('z'), b('a')), once), FdbErrorCode.inverted_range);
  await expectFdbError(t, db.doTransaction((tx) => tx.clearRange(b('z'), b('a')), once), FdbErrorCode.inverted_range);
});

define('keys and values that are not bytes fail with a typed error, not a crash', async (t, db) => {
  const asBytes = (input: unknown) => input as Uint8Array;
  for (const bad of ['text', 42, null, undefined, [1, 2], { length: 1 }]) {
    await expectFdbError(t, db.doTransaction((tx) => tx.set(asBytes(bad), b('v')), once), FdbErrorCode.client_invalid_operation);
    await expectFdbError(t, db.doTransaction((tx) => tx.set(b('k'), asBytes(bad)), once), FdbErrorCode.client_invalid_operation);
    await expectFdbError(t, db.doTransaction((tx) => tx.get(asBytes(bad)), once), FdbErrorCode.client_invalid_operation);
  }
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.set(asBytes('text'), b('v')), once));
  t.regex(error?.message ?? '', /key must be a Uint8Array or Buffer, got a string/);
  t.is(await read(db, 'k'), undefined);
});

define('using a transaction after it committed fails with a typed error', async (t, db) => {
  let kept: Transaction | undefined;
  await db.doTransaction((tx) => {
    kept = tx;
    tx.set(b('k'), b('v'));
  });
  const tx = kept!;
  t.throws(() => tx.set(b('k'), b('again')), { instanceOf: FdbError });
  await expectFdbError(t, tx.get(b('k')), FdbErrorCode.client_invalid_operation);
  t.is(await read(db, 'k'), 'v');
});

define('using a transaction while it commits fails with used_during_commit (2017)', async (t, db) => {
  let kept: Transaction | undefined;
  const committing = db.doTransaction((tx) => {
    kept = tx;
    tx.set(b('k'), b('v'));
  });
  // The commit starts a few microtasks after the body returns; it cannot finish without I/O.
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => queueMicrotask(resolve));
  const tx = kept!;
  t.throws(() => tx.set(b('k'), b('during')), { instanceOf: FdbError, message: /used_during_commit \(2017\)/ });
  await committing;
  t.is(await read(db, 'k'), 'v');
});

// ------------------------------------------------------------------ retry loop

define('doTransaction retries a conflicted body and commits the retry', async (t, db) => {
  await put(db, { n: '0' });
  let attempts = 0;
  await db.doTransaction(async (tx) => {
    attempts++;
    const n = Number(text(await tx.get(b('n'))));
    if (attempts === 1) await put(db, { n: '10' });
    tx.set(b('n'), b(String(n + 1)));
  });
  t.is(attempts, 2);
  t.is(await read(db, 'n'), '11');
});

define('doTransaction gives up after retryLimit retries with the last retryable error', async (t, db) => {
  let attempts = 0;
  await expectFdbError(
    t,
    db.doTransaction(
      async (tx) => {
        attempts++;
        await tx.get(b('hot'));
        await put(db, { hot: String(attempts) });
        tx.set(b('out'), b('x'));
      },
      { retryLimit: 3 },
    ),
    FdbErrorCode.not_committed,
  );
  t.is(attempts, 4);
});

define('doTransaction retries the retryable codes thrown by the body too', async (t, db) => {
  const seen: number[] = [];
  const codes = [FdbErrorCode.transaction_too_old, FdbErrorCode.future_version, FdbErrorCode.commit_unknown_result];
  const result = await db.doTransaction(() => {
    const code = codes[seen.length];
    if (code !== undefined) {
      seen.push(code);
      throw new FdbError(code);
    }
    return 'done';
  });
  t.is(result, 'done');
  t.deepEqual(seen, codes);
});

define('doTransaction does not retry other errors and rethrows them unchanged', async (t, db) => {
  let attempts = 0;
  const mine = new Error('mine');
  const thrown = await t.throwsAsync(
    db.doTransaction((tx) => {
      attempts++;
      tx.set(b('k'), b('v'));
      throw mine;
    }),
  );
  t.is(thrown, mine);
  await expectFdbError(
    t,
    db.doTransaction(() => {
      attempts++;
      throw new FdbError(FdbErrorCode.key_too_large);
    }),
    FdbErrorCode.key_too_large,
  );
  t.is(attempts, 2);
  t.is(await read(db, 'k'), undefined);
});

define('a body that returns a thenable (not a promise) is settled before the commit', async (t, db) => {
  const result = await db.doTransaction((tx) => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a thenable is what this case is about
      then(resolve: (value: string) => void) {
        setTimeout(() => {
          tx.set(b('late'), b('set by the thenable'));
          resolve('done');
        }, 5);
      },
    };
    // Typed as a promise only for the signature: it has nothing but `then`.
    return thenable as unknown as Promise<string>;
  });
  t.is(result, 'done');
  t.is(await read(db, 'late'), 'set by the thenable');
});

define('the then of a thenable a body returns is read once, as when a promise is resolved with it', async (t, db) => {
  let reads = 0;
  const result = await db.doTransaction(() => {
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a thenable is what this case is about
      get then() {
        reads++;
        return (resolve: (value: string) => void) => resolve('done');
      },
    };
    return thenable as unknown as Promise<string>;
  });
  t.is(result, 'done');
  t.is(reads, 1);
});

// ------------------------------------------------------------------ group commit, long keys, model

define('many concurrent transactions all commit and are all visible', async (t, db) => {
  await Promise.all(
    Array.from({ length: 300 }, (_, i) => db.doTransaction((tx) => tx.set(b(`g/${String(i).padStart(4, '0')}`), b(String(i))))),
  );
  const all = await db.doTransaction((tx) => tx.getRange(b('g/'), b('g0')));
  t.is(all.length, 300);
  t.is(all[299]?.value.toString(), '299');
});

define('concurrent read-modify-write transactions lose no update (serializable)', async (t, db) => {
  const keys = ['x', 'y', 'z'];
  const expected = new Map(keys.map((k) => [k, 0]));
  await Promise.all(
    Array.from({ length: 60 }, (_, i) => {
      const key = keys[i % keys.length] as string;
      expected.set(key, (expected.get(key) ?? 0) + 1);
      return db.doTransaction(async (tx) => {
        const current = Number(text(await tx.get(b(key))) ?? '0');
        // also read a total, so that every transaction conflicts with every other
        const total = Number(text(await tx.get(b('total'))) ?? '0');
        tx.set(b(key), b(String(current + 1)));
        tx.set(b('total'), b(String(total + 1)));
      });
    }),
  );
  for (const key of keys) t.is(await read(db, key), String(expected.get(key)));
  t.is(await read(db, 'total'), '60');
});

define('keys up to the limit (10,000 bytes, less any prefix the backend adds) round-trip and scan in order among short keys', async (t, db, backend) => {
  // The embedded engine stores keys as given and must take the full 10,000
  // bytes; FoundationDB counts the adapter's directory prefix against it.
  const longest = backend.maxKeyBytes(db);
  const long = (fill: number, length: number, last?: number) => {
    const key = Buffer.alloc(length, fill);
    if (last !== undefined) key[length - 1] = last;
    return key;
  };
  const keys = [
    long(0x61, 1899),
    long(0x61, 1900),
    long(0x61, 1901),
    long(0x61, 5000, 0x60),
    long(0x61, 5000),
    long(0x61, 5000, 0x62),
    long(0x61, longest),
    Buffer.concat([long(0x61, 1900), b('b')]),
    long(0x62, 3000),
    long(0x62, 1),
  ];
  await db.doTransaction((tx) => {
    for (const [i, key] of keys.entries()) tx.set(key, b(String(i)));
  });
  const sorted = [...keys].sort(Buffer.compare);
  const describeKeys = (list: Buffer[]) => list.map((k) => `${k.length}:${k.at(-1)}:${k[1900]}`);
  const all = await db.doTransaction((tx) => tx.getRange(Buffer.from([0x61]), Buffer.from([0x63])));
  t.deepEqual(
    describeKeys(all.map((e) => e.key)),
    describeKeys(sorted),
  );
  const reversed = await db.doTransaction((tx) => tx.getRange(Buffer.from([0x61]), Buffer.from([0x63]), { reverse: true }));
  t.deepEqual(
    describeKeys(reversed.map((e) => e.key)),
    describeKeys([...sorted].reverse()),
  );
  for (const [i, key] of keys.entries()) t.is(text(await db.doTransaction((tx) => tx.get(key))), String(i));
  // a range bounded by long keys
  const inner = await db.doTransaction((tx) => tx.getRange(long(0x61, 5000, 0x60), long(0x61, 5000, 0x62)));
  t.deepEqual(
    describeKeys(inner.map((e) => e.key)),
    describeKeys([long(0x61, 5000, 0x60), long(0x61, 5000), long(0x61, longest)]),
  );
  await db.doTransaction((tx) => {
    tx.clear(long(0x61, 5000));
    tx.clearRange(long(0x61, longest), Buffer.from([0x62]));
  });
  const left = await db.doTransaction((tx) => tx.getRange(Buffer.from([0x61]), Buffer.from([0x63])));
  const survivors = sorted.filter(
    (key) =>
      !key.equals(long(0x61, 5000)) &&
      !(Buffer.compare(key, long(0x61, longest)) >= 0 && Buffer.compare(key, Buffer.from([0x62])) < 0),
  );
  t.is(survivors.length, sorted.length - 4);
  t.deepEqual(describeKeys(left.map((e) => e.key)), describeKeys(survivors));
  t.is(await db.doTransaction((tx) => tx.get(long(0x61, 5000))), undefined);
});

/** A transaction's operations, checked against a Map model applied one call at a time. */
type ModelOp =
  | { op: 'set'; key: string; value: string }
  | { op: 'clear'; key: string }
  | { op: 'clearRange'; start: string; end: string }
  | { op: 'add'; key: string; delta: number }
  | { op: 'get'; key: string }
  | { op: 'range'; start: string; end: string; limit: number; reverse: boolean };

// Long keys (over 1,900 bytes) share prefixes, to cover the embedded engine's long-key buckets.
const longKeys = ['c'.repeat(1900), `${'c'.repeat(1900)}a`, 'c'.repeat(2500), `${'c'.repeat(1900)}${'b'.repeat(3000)}`];
const keyArb = fc.constantFrom('a', 'b', 'c', 'ca', 'd', 'e', ...longKeys);
const opArb: fc.Arbitrary<ModelOp> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key: keyArb, value: fc.constantFrom('x', 'y', 'z') }),
  fc.record({ op: fc.constant('clear' as const), key: keyArb }),
  fc.record({ op: fc.constant('clearRange' as const), start: keyArb, end: keyArb }),
  fc.record({ op: fc.constant('add' as const), key: fc.constantFrom('n', 'm'), delta: fc.integer({ min: -5, max: 5 }) }),
  fc.record({ op: fc.constant('get' as const), key: fc.constantFrom('a', 'b', 'c', 'ca', 'd', 'e', 'n', 'm', ...longKeys) }),
  fc.record({
    op: fc.constant('range' as const),
    start: keyArb,
    end: fc.constantFrom('b', 'c', 'd', 'z', ...longKeys),
    limit: fc.integer({ min: 0, max: 4 }),
    reverse: fc.boolean(),
  }),
);

define('random transactions read and write like a serial model (property)', async (t, db) => {
  const model = new Map<string, Buffer>();
  const modelRange = (view: Map<string, Buffer>, start: string, end: string, limit: number, reverse: boolean) => {
    const keys = [...view.keys()].filter((k) => k >= start && k < end).sort();
    if (reverse) keys.reverse();
    return (limit > 0 ? keys.slice(0, limit) : keys).map((k) => `${short(k)}=${view.get(k)?.toString('hex')}`);
  };
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (transactions) => {
      for (const ops of transactions) {
        const view = new Map(model);
        await db.doTransaction(async (tx) => {
          for (const op of ops) {
            switch (op.op) {
              case 'set':
                tx.set(b(op.key), b(op.value));
                view.set(op.key, b(op.value));
                break;
              case 'clear':
                tx.clear(b(op.key));
                view.delete(op.key);
                break;
              case 'clearRange':
                if (op.start > op.end) break;
                tx.clearRange(b(op.start), b(op.end));
                for (const k of [...view.keys()]) if (k >= op.start && k < op.end) view.delete(k);
                break;
              case 'add': {
                tx.atomicAdd(b(op.key), op.delta);
                const next = Buffer.alloc(8);
                next.writeBigInt64LE(BigInt.asIntN(64, (view.get(op.key)?.readBigInt64LE() ?? 0n) + BigInt(op.delta)));
                view.set(op.key, next);
                break;
              }
              case 'get':
                t.deepEqual(await tx.get(b(op.key)), view.get(op.key), `get ${op.key.slice(0, 8)}…(${op.key.length})`);
                break;
              case 'range': {
                if (op.start > op.end) break;
                const got = await tx.getRange(b(op.start), b(op.end), { limit: op.limit, reverse: op.reverse });
                t.deepEqual(
                  got.map((e) => `${short(e.key.toString())}=${e.value.toString('hex')}`),
                  modelRange(view, op.start, op.end, op.limit, op.reverse),
                  `range ${short(op.start)}..${short(op.end)} limit ${op.limit} reverse ${op.reverse}`,
                );
                break;
              }
            }
          }
        });
        model.clear();
        for (const [k, v] of view) model.set(k, v);
        const stored = await db.doTransaction((tx) => tx.getRange(b(''), b('\xfe')));
        t.deepEqual(
          stored.map((e) => `${short(e.key.toString())}=${e.value.toString('hex')}`),
          modelRange(model, '', '\xfe', 0, false),
        );
      }
    }),
    { numRuns: 40 },
  );
});

define('concurrent random transactions are serializable in versionstamp order (property)', async (t, db) => {
  const names = ['p', 'q', 'r', 's'];
  const txArb = fc.record({
    reads: fc.subarray(names),
    rangeRead: fc.boolean(),
    writes: fc.subarray(names, { minLength: 1 }),
  });
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(txArb, { minLength: 2, maxLength: 8 }), async (specs) => {
      const prefix = `r${round++}/`;
      const results = await Promise.all(
        specs.map((spec, i) =>
          db.doTransaction(async (tx) => {
            const seen: Array<string | undefined> = [];
            for (const name of spec.reads) seen.push(text(await tx.get(b(prefix + name))));
            const range = spec.rangeRead ? pairs(await tx.getRange(b(prefix), b(`${prefix}~`))) : [];
            // yield so that the transactions interleave
            await new Promise((resolve) => setImmediate(resolve));
            for (const name of spec.writes) tx.set(b(prefix + name), b(String(i)));
            return { i, seen, range, stamp: tx.getVersionstamp() };
          }),
        ),
      );
      const ordered = await Promise.all(results.map(async (r) => ({ ...r, stamp: await r.stamp })));
      ordered.sort((x, y) => Buffer.compare(x.stamp, y.stamp));
      const model = new Map<string, string>();
      for (const { i, seen, range, stamp } of ordered) {
        const spec = specs[i]!;
        t.deepEqual(
          seen,
          spec.reads.map((name) => model.get(name)),
          `transaction ${i} (stamp ${stamp.toString('hex')}) read what the serial order had written`,
        );
        if (spec.rangeRead) {
          const expected = [...model.keys()].sort().map((name) => `${prefix}${name}=${model.get(name)}`);
          t.deepEqual(range, expected);
        }
        for (const name of spec.writes) model.set(name, String(i));
      }
    }),
    { numRuns: 25 },
  );
});

// ------------------------------------------------------------------ registration

function register(backend: StorageBackend): void {
  if (backend.skipReason !== undefined) {
    console.log(`storage conformance: skipping backend ${backend.name}: ${backend.skipReason}`);
    for (const [title] of cases) test.skip(`${backend.name}: ${title}`, () => {});
    return;
  }
  for (const [title, run] of cases) {
    test(`${backend.name}: ${title}`, async (t) => {
      const db = await backend.open();
      try {
        await run(t, db, backend);
      } finally {
        await backend.destroy(db);
      }
    });
  }
}

for (const backend of backends) register(backend);
