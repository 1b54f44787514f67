// Guarantees of the embedded engine's commit path that speed work on it can
// break without any conformance case noticing: buffers a caller gets from a
// read or hands to a write are its own (no later read, commit or batch
// changes them), read-your-writes and snapshot reads hold for any mix of
// mutations (short keys and long ones, which live in shared buckets),
// transactions committed together in one batch each get their own
// versionstamp from a template they share, pipelined read-modify-write
// transactions lose no update, and a commit resolves (and its data becomes
// readable) only once lmdb reports it flushed.

import test from 'ava';
import { FdbError } from '@jobtree/core';
import type { Database, KeyValue, Transaction } from '@jobtree/core';
import { applyAdd } from '../../packages/core/src/storage/atomic-add.js';
import {
  setHandedOver,
  setVersionstampedKeyHandedOver,
  setVersionstampedValueHandedOver,
} from '../../packages/core/src/storage/fast-paths.js';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { seededRandom } from '../seeded-random.js';
import { openTempDatabase } from './temp-database.js';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);
/** A key past the engine's 1,900-byte lmdb limit: it lives in a bucket shared with every long key of the same prefix. */
const long = (prefix: string, suffix = '') => Buffer.concat([b(prefix), Buffer.alloc(1_950, 0x6c), b(suffix)]);

/** Two commits at once: the next batches take lmdb's asynchronous (streamed) write, not the lone-commit path. */
async function warmUp(db: Database): Promise<void> {
  await Promise.all([db.doTransaction((tx) => tx.set(b('warm/1'), b('1'))), db.doTransaction((tx) => tx.set(b('warm/2'), b('1')))]);
}

function hex(value: Buffer | undefined): string | undefined {
  return value?.toString('hex');
}

function pairs(rows: readonly KeyValue[]): string[] {
  return rows.map((row) => `${row.key.toString('hex')}=${row.value.toString('hex')}`);
}

// --- buffers the caller owns ------------------------------------------------

test('a value read stays as read: later reads, in the transaction and in later ones, do not change it', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  const keys = [b('own/a'), b('own/b'), long('own/c'), long('own/d')];
  await db.doTransaction((tx) => {
    keys.forEach((key, i) => {
      tx.set(key, Buffer.alloc(64, 0x41 + i));
    });
  });
  const seen: Buffer[] = [];
  await db.doTransaction(async (tx) => {
    seen.length = 0;
    for (const key of keys) seen.push((await tx.get(key)) as Buffer);
    seen.push((await tx.snapshot().get(keys[0] as Buffer)) as Buffer);
    const rows = await tx.getRange(b('own/'), b('own0'));
    for (const row of rows) seen.push(row.value);
  });
  // Other transactions rewrite every key (same lengths), many times over.
  for (let round = 0; round < 5; round++) {
    await Promise.all(
      keys.map((key, i) => db.doTransaction((tx) => tx.set(key, Buffer.alloc(64, 0x61 + ((i + round) % 20))))),
    );
  }
  t.is(hex(seen[0]), hex(Buffer.alloc(64, 0x41)));
  t.is(hex(seen[1]), hex(Buffer.alloc(64, 0x42)));
  t.is(hex(seen[2]), hex(Buffer.alloc(64, 0x43)));
  t.is(hex(seen[3]), hex(Buffer.alloc(64, 0x44)));
  t.is(hex(seen[4]), hex(Buffer.alloc(64, 0x41)), 'snapshot read');
  t.is(hex(seen[5]), hex(Buffer.alloc(64, 0x41)), 'range read, first row');
  t.is(hex(seen[6]), hex(Buffer.alloc(64, 0x42)), 'range read, second row');
});

test('changing a buffer a read returned changes neither the store nor a later read of the same key', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await db.doTransaction((tx) => {
    tx.set(b('mut/a'), b('stored-a'));
    tx.set(long('mut/b'), b('stored-b'));
  });
  await db.doTransaction(async (tx) => {
    const a = (await tx.get(b('mut/a'))) as Buffer;
    a.fill(0x7a);
    const bb = (await tx.get(long('mut/b'))) as Buffer;
    bb.fill(0x7a);
    t.is((await tx.get(b('mut/a')))?.toString(), 'stored-a');
    t.is((await tx.get(long('mut/b')))?.toString(), 'stored-b');
    const rows = await tx.getRange(b('mut/'), b('mut0'));
    for (const row of rows) row.value.fill(0x7a);
    t.is((await tx.snapshot().get(b('mut/a')))?.toString(), 'stored-a');
    // Read-your-writes: what a read of a buffered write returns is a copy too.
    tx.set(b('mut/c'), b('written-c'));
    const c = (await tx.get(b('mut/c'))) as Buffer;
    c.fill(0x7a);
    t.is((await tx.get(b('mut/c')))?.toString(), 'written-c');
  });
  const after = await db.doTransaction(async (tx) => [await tx.get(b('mut/a')), await tx.get(long('mut/b')), await tx.get(b('mut/c'))]);
  t.deepEqual(
    after.map((value) => value?.toString()),
    ['stored-a', 'stored-b', 'written-c'],
  );
});

test('a caller that changes its key and value buffers after set() or clearRange() does not change what commits', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const key = b('given/a');
  const value = b('original');
  const longKey = long('given/b');
  const longValue = b('original-long');
  const start = b('range/b');
  const end = b('range/d');
  await db.doTransaction((tx) => {
    tx.set(b('range/a'), b('1'));
    tx.set(b('range/c'), b('1'));
    tx.set(b('range/e'), b('1'));
  });
  // Several transactions in one batch, each changing its buffers right after the calls.
  await Promise.all(
    [0, 1, 2].map((i) =>
      db.doTransaction((tx) => {
        if (i === 0) {
          tx.set(key, value);
          tx.set(longKey, longValue);
          value.fill(0x3f);
          longValue.fill(0x3f);
          key.fill(0x3f);
          longKey.fill(0x3f);
        } else if (i === 1) {
          tx.clearRange(start, end);
          start.fill(0);
          end.fill(0xfe);
        } else {
          tx.set(b(`other/${i}`), b('x'));
        }
      }),
    ),
  );
  const rows = await db.doTransaction(async (tx) => ({
    a: (await tx.get(b('given/a')))?.toString(),
    b: (await tx.get(long('given/b')))?.toString(),
    range: (await tx.getRange(b('range/'), b('range0'))).map((row) => row.key.toString()),
    junk: await tx.get(Buffer.alloc(7, 0x3f)),
  }));
  t.deepEqual(rows, { a: 'original', b: 'original-long', range: ['range/a', 'range/e'], junk: undefined });
});

// --- read-your-writes and snapshots, fuzzed ----------------------------------

/** The keys the fuzz uses: short ones and long ones of two buckets, interleaved in key order. */
function fuzzKeys(prefix: string): Buffer[] {
  const keys: Buffer[] = [];
  for (const letter of 'abcdefgh') keys.push(b(`${prefix}/${letter}`));
  for (const letter of 'abcd') keys.push(Buffer.concat([b(`${prefix}/`), Buffer.alloc(1_950, 0x6d), b(letter)]));
  for (const letter of 'ab') keys.push(Buffer.concat([b(`${prefix}/`), Buffer.alloc(1_950, 0x6e), b(letter)]));
  for (const letter of 'ab') keys.push(Buffer.concat([b(`${prefix}/e`), Buffer.alloc(1_920, 0x30), b(letter)]));
  return keys.sort(Buffer.compare);
}

type Model = Map<string, Buffer>;

function modelRange(model: Model, start: Buffer, end: Buffer, limit: number, reverse: boolean): string[] {
  const keys = [...model.keys()]
    .map((key) => Buffer.from(key, 'latin1'))
    .filter((key) => Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0)
    .sort(Buffer.compare);
  if (reverse) keys.reverse();
  return keys
    .slice(0, limit)
    .map((key) => `${key.toString('hex')}=${(model.get(key.toString('latin1')) as Buffer).toString('hex')}`);
}

/**
 * Runs `steps` random operations in `tx` against `model` (the store as the
 * transaction should see it), checking every read; `model` ends as the
 * transaction's result. Reads through `tx.snapshot()` see the same.
 */
async function fuzzTransaction(t: { is(a: unknown, b: unknown, m?: string): void; deepEqual(a: unknown, b: unknown, m?: string): void }, tx: Transaction, model: Model, keys: Buffer[], next: () => number, steps: number, label: string): Promise<void> {
  const pick = () => keys[Math.floor(next() * keys.length)] as Buffer;
  for (let step = 0; step < steps; step++) {
    const roll = next();
    const key = pick();
    const where = `${label} step ${step}`;
    if (roll < 0.25) {
      const value = Buffer.from(`v${Math.floor(next() * 1000)}-${'x'.repeat(Math.floor(next() * 12))}`);
      tx.set(key, value);
      model.set(key.toString('latin1'), Buffer.from(value));
    } else if (roll < 0.35) {
      tx.clear(key);
      model.delete(key.toString('latin1'));
    } else if (roll < 0.42) {
      const other = pick();
      const [start, end] = Buffer.compare(key, other) <= 0 ? [key, other] : [other, key];
      tx.clearRange(start, end);
      for (const stored of [...model.keys()]) {
        const k = Buffer.from(stored, 'latin1');
        if (Buffer.compare(start, k) <= 0 && Buffer.compare(k, end) < 0) model.delete(stored);
      }
    } else if (roll < 0.52) {
      const delta = Math.floor(next() * 2000) - 1000;
      tx.atomicAdd(key, delta);
      model.set(key.toString('latin1'), applyAdd(model.get(key.toString('latin1')), BigInt.asUintN(64, BigInt(delta))));
    } else if (roll < 0.72) {
      const reader = next() < 0.3 ? tx.snapshot() : tx;
      t.is(hex(await reader.get(key)), hex(model.get(key.toString('latin1'))), `${where}: get`);
    } else {
      const other = pick();
      const [start, end] = Buffer.compare(key, other) <= 0 ? [key, other] : [other, key];
      const limit = next() < 0.5 ? Number.POSITIVE_INFINITY : 1 + Math.floor(next() * 4);
      const reverse = next() < 0.4;
      const reader = next() < 0.3 ? tx.snapshot() : tx;
      const rows = await reader.getRange(start, end, { limit, reverse });
      t.deepEqual(pairs(rows), modelRange(model, start, end, limit, reverse), `${where}: getRange limit ${limit} reverse ${reverse}`);
    }
  }
}

test('read-your-writes over random mutations of short and long keys, in transactions that commit in shared batches', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const next = seededRandom(18_001);
  const clients = 6;
  const models: Model[] = [];
  const keySets: Buffer[][] = [];
  for (let c = 0; c < clients; c++) {
    models.push(new Map());
    keySets.push(fuzzKeys(`c${c}`));
  }
  for (let round = 0; round < 12; round++) {
    // Each client works on keys of its own (no conflicts), all in the same turns: the commits share batches.
    await Promise.all(
      models.map((model, c) =>
        db.doTransaction(
          async (tx) => {
            const working = new Map(model);
            await fuzzTransaction(t, tx, working, keySets[c] as Buffer[], next, 25, `round ${round} client ${c}`);
            return working;
          },
          { retryLimit: 0 },
        ).then((committed) => {
          models[c] = committed;
        }),
      ),
    );
    // What committed is what the store holds, read by a fresh transaction.
    const stored = await db.doTransaction((tx) => tx.getRange(b('c'), b('d')));
    const expected = models.flatMap((model) => modelRange(model, b('c'), b('d'), Number.POSITIVE_INFINITY, false)).sort();
    t.deepEqual(pairs(stored).sort(), expected, `round ${round}: the store after commit`);
  }
});

test('a transaction keeps reading the version it started at while newer batches commit', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  await db.doTransaction((tx) => {
    tx.set(b('snap/a'), b('a1'));
    tx.set(long('snap/b'), b('b1'));
  });
  const { promise: written, resolve: wrote } = deferred();
  const reader = db.doTransaction(
    async (tx) => {
      const first = (await tx.get(b('snap/a')))?.toString();
      await written;
      return {
        first,
        again: (await tx.get(b('snap/a')))?.toString(),
        long: (await tx.get(long('snap/b')))?.toString(),
        added: (await tx.snapshot().get(b('snap/c')))?.toString(),
        range: (await tx.snapshot().getRange(b('snap/'), b('snap0'))).map((row) => row.value.toString()),
      };
    },
    { retryLimit: 0 },
  );
  // Several batches commit while the reader waits.
  for (let i = 2; i < 5; i++) {
    await Promise.all([
      db.doTransaction((tx) => tx.set(b('snap/a'), b(`a${i}`))),
      db.doTransaction((tx) => {
        tx.set(long('snap/b'), b(`b${i}`));
        tx.set(b('snap/c'), b(`c${i}`));
      }),
    ]);
  }
  wrote();
  t.deepEqual(await reader, { first: 'a1', again: 'a1', long: 'b1', added: undefined, range: ['a1', 'b1'] });
});

// --- conflicts of pipelined transactions ----------------------------------

test('pipelined read-modify-write transactions on short and long counters lose no update', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const counters = [b('ctr/a'), b('ctr/b'), long('ctr/c'), long('ctr/d'), long('ctr/e')];
  const next = seededRandom(18_002);
  const committed = new Map<string, number>();
  const clients = 12;
  const perClient = 20;
  const work: Promise<void>[] = [];
  for (let c = 0; c < clients; c++) {
    work.push(
      (async () => {
        const inFlight: Promise<void>[] = [];
        for (let i = 0; i < perClient; i++) {
          const key = counters[Math.floor(next() * counters.length)] as Buffer;
          const twice = next() < 0.3 ? (counters[Math.floor(next() * counters.length)] as Buffer) : undefined;
          // Some write a few milliseconds after they read: several batches behind when they commit.
          const lag = next() < 0.3 ? 1 + Math.floor(next() * 4) : 0;
          // Not awaited one by one: the next transaction reads while the previous is being written.
          inFlight.push(
            db
              .doTransaction(async (tx) => {
                for (const k of twice === undefined || twice.equals(key) ? [key] : [key, twice]) {
                  const value = await tx.get(k);
                  if (lag > 0) await new Promise((resolve) => setTimeout(resolve, lag));
                  tx.set(k, b(String(Number(value?.toString() ?? '0') + 1)));
                }
              }, { retryLimit: Number.POSITIVE_INFINITY })
              .then(() => {
                for (const k of twice === undefined || twice.equals(key) ? [key] : [key, twice]) {
                  const name = k.toString('latin1');
                  committed.set(name, (committed.get(name) ?? 0) + 1);
                }
              }),
          );
          if (i % 3 === 2) await inFlight[inFlight.length - 2];
        }
        await Promise.all(inFlight);
      })(),
    );
  }
  await Promise.all(work);
  const stored = await db.doTransaction(async (tx) => Promise.all(counters.map((key) => tx.get(key))));
  counters.forEach((key, i) => {
    t.is(Number(stored[i]?.toString() ?? '0'), committed.get(key.toString('latin1')) ?? 0, `counter ${i}`);
  });
});

test('a pipelined transaction that read a range a newer batch inserted a long key into does not commit', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const { promise: released, resolve: release } = deferred();
  const { promise: readDone, resolve: hasRead } = deferred();
  const reader = db
    .doTransaction(
      async (tx) => {
        const rows = await tx.getRange(b('slots/'), b('slots0'));
        hasRead();
        await released;
        tx.set(b('claimed'), b(String(rows.length)));
      },
      { retryLimit: 0 },
    )
    .then(
      () => 'committed',
      (error: unknown) => (error instanceof FdbError ? error.code : String(error)),
    );
  await readDone;
  // The conflicting batch, then batches of unrelated keys (some long, in the same bucket).
  await db.doTransaction((tx) => tx.set(long('slots/x'), b('1')));
  for (let i = 0; i < 3; i++) {
    await Promise.all([db.doTransaction((tx) => tx.set(long(`other/${i}`), b('1'))), db.doTransaction((tx) => tx.set(b(`other/${i}`), b('1')))]);
  }
  release();
  t.is(await reader, 1020);
});

// --- versionstamps of transactions sharing a template ------------------------

test('transactions of one batch that stamp keys and values from one shared template each get their own stamp, and the template stays as it was', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const prefix = b('stamped/');
  const keyTemplate = Buffer.concat([prefix, Buffer.alloc(10), b('/tail')]);
  const valueTemplate = Buffer.concat([b('v:'), Buffer.alloc(10)]);
  const keyCopy = Buffer.from(keyTemplate);
  const valueCopy = Buffer.from(valueTemplate);
  const count = 24;
  const results = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      db.doTransaction((tx) => {
        if (i % 2 === 0) {
          tx.setVersionstampedKey(keyTemplate, prefix.length, b(`value-${i}`));
          tx.setVersionstampedValue(b(`stampval/${i}`), valueTemplate, 2);
        } else {
          // The jobs layer's path: buffers handed over (the key template is still the caller's).
          setVersionstampedKeyHandedOver(tx, keyTemplate, prefix.length, b(`value-${i}`));
          setVersionstampedValueHandedOver(tx, b(`stampval/${i}`), Buffer.from(valueTemplate), 2);
          setHandedOver(tx, b(`plain/${i}`), b(`plain-${i}`));
        }
        return { stamp: tx.getVersionstamp() };
      }),
    ),
  );
  const stamps = await Promise.all(results.map((result) => result.stamp));
  t.is(new Set(stamps.map((stamp) => stamp.toString('hex'))).size, count, 'every transaction has its own stamp');
  t.is(keyTemplate.toString('hex'), keyCopy.toString('hex'), 'the shared key template was not stamped in place');
  t.is(valueTemplate.toString('hex'), valueCopy.toString('hex'), 'the shared value template was not stamped in place');
  const stored = await db.doTransaction(async (tx) => ({
    keys: await tx.getRange(prefix, b('stamped0')),
    values: await Promise.all(stamps.map((_, i) => tx.get(b(`stampval/${i}`)))),
    plain: await Promise.all(stamps.map((_, i) => (i % 2 === 1 ? tx.get(b(`plain/${i}`)) : Promise.resolve(undefined)))),
  }));
  t.is(stored.keys.length, count);
  for (let i = 0; i < count; i++) {
    const stamp = stamps[i] as Buffer;
    const expectedKey = Buffer.concat([prefix, stamp, b('/tail')]);
    const row = stored.keys.find((candidate) => candidate.key.equals(expectedKey));
    t.is(row?.value.toString(), `value-${i}`, `the key stamped by transaction ${i}`);
    t.is(hex(stored.values[i]), hex(Buffer.concat([b('v:'), stamp])), `the value stamped by transaction ${i}`);
    if (i % 2 === 1) t.is(stored.plain[i]?.toString(), `plain-${i}`);
  }
});

// --- durability -------------------------------------------------------------

test.serial('a commit resolves, and becomes readable, only once lmdb reports its batch flushed', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  await warmUp(db);
  const { promise: flushGate, resolve: releaseFlush } = deferred();
  const { promise: lmdbCommitted, resolve: committedSeen } = deferred();
  const write = LmdbStore.prototype.write;
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
    LmdbStore.prototype.writeNow = writeNow;
  });
  let gated = 0;
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    const pending = write.call(this, version, fill);
    if (gated === 0) {
      gated += 1;
      void pending.committed.then(() => committedSeen());
      const flushed = pending.flushed;
      pending.flushed = flushed.then(async (value) => {
        await flushGate;
        return value;
      });
    }
    return pending;
  };
  // A lone commit written in place is synced when it returns: only the asynchronous write can be held.
  LmdbStore.prototype.writeNow = function (this: LmdbStore) {
    throw new Error('the test expects the asynchronous write path');
  };
  let settled = 0;
  const commits = [0, 1, 2].map((i) =>
    db.doTransaction((tx) => tx.set(b(`durable/${i}`), b('1'))).then(() => {
      settled += 1;
    }),
  );
  await lmdbCommitted;
  // lmdb made the batch visible to its readers; it is not flushed yet.
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(settled, 0, 'no commit resolved before its batch was flushed');
  const early = await db.doTransaction(async (tx) => [await tx.get(b('durable/0')), await tx.getRange(b('durable/'), b('durable0'))]);
  t.is(early[0], undefined, 'a transaction started before the flush does not read the batch');
  t.deepEqual(early[1], []);
  releaseFlush();
  await Promise.all(commits);
  t.is(settled, 3);
  const late = await db.doTransaction((tx) => tx.getRange(b('durable/'), b('durable0')));
  t.is(late.length, 3);
});

/**
 * Starts a transaction that reads per `read` and then waits for `release()`
 * to write `out/<name>` and commit (no retry). `read` resolves once it has read.
 */
function heldTransaction(db: Database, name: string, read: (tx: Transaction) => Promise<unknown>) {
  const { promise: released, resolve: release } = deferred();
  const { promise: readDone, resolve: hasRead } = deferred();
  const outcome = db
    .doTransaction(
      async (tx) => {
        await read(tx);
        hasRead();
        await released;
        tx.set(b(`out/${name}`), b('1'));
      },
      { retryLimit: 0 },
    )
    .then(
      () => 'committed' as const,
      (error: unknown) => (error instanceof FdbError ? error.code : String(error)),
    );
  return { readDone, release, outcome };
}

/** Lets every queued microtask run, in the same event turn (the open batch stays open). */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

for (const members of [1, 40]) {
  test(`a transaction that joins a batch after another was checked against it still conflicts with what it reads (${members} members before)`, async (t) => {
    const db = await openTempDatabase(t, 'commit-path');
    await warmUp(db);
    await db.doTransaction((tx) => {
      tx.set(b('grow/k'), b('0'));
      tx.set(long('grow/l'), b('0'));
    });
    const readers = {
      point: heldTransaction(db, 'point', (tx) => tx.get(b('grow/k'))),
      longPoint: heldTransaction(db, 'longPoint', (tx) => tx.get(long('grow/l'))),
      range: heldTransaction(db, 'range', (tx) => tx.getRange(b('grow/r/'), b('grow/r0'))),
      cleared: heldTransaction(db, 'cleared', (tx) => tx.get(b('grow/c/1'))),
      // Checked first, against the batch as it is before the conflicting writes join it.
      early: heldTransaction(db, 'early', (tx) => Promise.all([tx.get(b('grow/k')), tx.get(long('grow/l')), tx.getRange(b('grow/r/'), b('grow/r0')), tx.get(b('grow/c/1'))])),
    };
    await Promise.all(Object.values(readers).map((reader) => reader.readDone));
    // One event turn: the batch opens with unrelated writes, `early` is checked against it, then the writes the others read join it.
    for (let i = 0; i < members; i++) void db.doTransaction((tx) => tx.set(b(`grow/other/${i}`), b('1')));
    readers.early.release();
    await microtasks();
    void db.doTransaction((tx) => tx.set(b('grow/k'), b('1')));
    void db.doTransaction((tx) => tx.set(long('grow/l'), b('1')));
    void db.doTransaction((tx) => tx.set(b('grow/r/new'), b('1')));
    void db.doTransaction((tx) => tx.clearRange(b('grow/c/'), b('grow/c0')));
    for (const name of ['point', 'longPoint', 'range', 'cleared'] as const) readers[name].release();
    t.is(await readers.early.outcome, 'committed', 'the transaction checked before the writes joined commits');
    t.is(await readers.point.outcome, 1020, 'point read');
    t.is(await readers.longPoint.outcome, 1020, 'long key read');
    t.is(await readers.range.outcome, 1020, 'range read');
    t.is(await readers.cleared.outcome, 1020, 'point read of a cleared range');
  });
}

test('range reads return every value whole and as stored, whatever its size, for short and long keys', async (t) => {
  const db = await openTempDatabase(t, 'commit-path');
  const sizes = [0, 1, 7, 100, 1_000, 2_000, 4_095, 4_096, 4_097, 8_192, 20_000, 65_536, 99_999];
  const patterned = (size: number, seed: number) => {
    const value = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i++) value[i] = (i * 31 + seed * 7) & 0xff;
    return value;
  };
  // A few per transaction: values up to 100 kB each.
  for (let i = 0; i < sizes.length; i += 3) {
    await db.doTransaction((tx) => {
      for (const size of sizes.slice(i, i + 3)) {
        tx.set(b(`sizes/${String(size).padStart(6, '0')}`), patterned(size, 1));
        tx.set(long('sizes/', String(size).padStart(6, '0')), patterned(size, 2));
      }
    });
  }
  const read = await db.doTransaction(async (tx) => ({
    forward: await tx.getRange(b('sizes/'), b('sizes0')),
    backward: await tx.snapshot().getRange(b('sizes/'), b('sizes0'), { reverse: true }),
    limited: await tx.getRange(b('sizes/'), b('sizes0'), { limit: 5 }),
    points: await Promise.all(sizes.map((size) => tx.get(b(`sizes/${String(size).padStart(6, '0')}`)))),
  }));
  const expected = [
    ...sizes.map((size) => ({ key: b(`sizes/${String(size).padStart(6, '0')}`), value: patterned(size, 1) })),
    ...sizes.map((size) => ({ key: long('sizes/', String(size).padStart(6, '0')), value: patterned(size, 2) })),
  ].sort((x, y) => Buffer.compare(x.key, y.key));
  const digest = (rows: readonly KeyValue[]) => rows.map((row) => `${row.key.length}:${row.key.subarray(-12).toString()}=${row.value.length}:${row.value.toString('base64')}`);
  t.deepEqual(digest(read.forward), digest(expected));
  t.deepEqual(digest(read.backward), digest([...expected].reverse()));
  t.deepEqual(digest(read.limited), digest(expected.slice(0, 5)));
  t.deepEqual(
    read.points.map((value) => value?.toString('base64')),
    sizes.map((size) => patterned(size, 1).toString('base64')),
  );
  // Each value is the caller's own: changing one changes no other, nor a later read.
  for (const row of read.forward) row.value.fill(0x5a);
  const again = await db.doTransaction((tx) => tx.getRange(b('sizes/'), b('sizes0')));
  t.deepEqual(digest(again), digest(expected));
});

for (const behind of [1, 3]) {
  test(`write-conflict keys and versionstamped keys among many of one batch conflict with what a reader ${behind} batch(es) behind read`, async (t) => {
    const db = await openTempDatabase(t, 'commit-path');
    await warmUp(db);
    const readers = {
      conflictKey: heldTransaction(db, 'conflictKey', (tx) => tx.get(b('wck/key-37'))),
      conflictKeyLong: heldTransaction(db, 'conflictKeyLong', (tx) => tx.get(long('wck/', 'key-41'))),
      stampedRange: heldTransaction(db, 'stampedRange', (tx) => tx.getRange(b('stamp/t7/'), b('stamp/t7/\xff'))),
      untouched: heldTransaction(db, 'untouched', (tx) => Promise.all([tx.get(b('wck/key-999')), tx.getRange(b('stamp/none/'), b('stamp/none0'))])),
    };
    await Promise.all(Object.values(readers).map((reader) => reader.readDone));
    // One batch: several transactions, each with many write-conflict keys and stamped keys (point writes outside their maps).
    await Promise.all(
      Array.from({ length: 10 }, (_, tx) =>
        db.doTransaction((txn) => {
          for (let k = 0; k < 5; k++) {
            const n = tx * 5 + k;
            txn.addWriteConflictKey(b(`wck/key-${n}`));
            txn.addWriteConflictKey(long('wck/', `key-${n}`));
            txn.setVersionstampedKey(Buffer.concat([b(`stamp/t${tx}/`), Buffer.alloc(10), b(`/${k}`)]), `stamp/t${tx}/`.length, b('v'));
          }
          txn.set(b(`wck/written-${tx}`), b('1'));
        }),
      ),
    );
    for (let i = 1; i < behind; i++) {
      await Promise.all([db.doTransaction((tx) => tx.set(b(`later/${i}/a`), b('1'))), db.doTransaction((tx) => tx.set(b(`later/${i}/b`), b('1')))]);
    }
    for (const reader of Object.values(readers)) reader.release();
    t.is(await readers.conflictKey.outcome, 1020, 'a write-conflict key');
    t.is(await readers.conflictKeyLong.outcome, 1020, 'a long write-conflict key');
    t.is(await readers.stampedRange.outcome, 1020, 'a range that holds versionstamped keys');
    t.is(await readers.untouched.outcome, 'committed');
  });
}
