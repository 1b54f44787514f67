// The FoundationDB adapter's parts that run without a cluster: the key-prefix
// and mutation-operand mappings, the lazy loading of the binding, and the
// adapter's Transaction/Database wiring over a fake binding that behaves like
// node-foundationdb's root-subspace transaction. The adapter against a real
// cluster runs in the shared conformance suite when FDB_CLUSTER_FILE is set.

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@jobtree/core';
import test from 'ava';
import { BackendUnavailableError, FdbError, FdbErrorCode } from '../../packages/core/src/errors.js';
import type {
  BindingDatabase,
  BindingRangeOptions,
  BindingTransaction,
  BindingWatch,
} from '../../packages/core/src/storage/foundationdb/binding.js';
import { MutationType, loadBinding } from '../../packages/core/src/storage/foundationdb/binding.js';
import { FoundationDbDatabase } from '../../packages/core/src/storage/foundationdb/fdb-database.js';
import { Keyspace } from '../../packages/core/src/storage/foundationdb/keyspace.js';
import {
  addMutationOperand,
  versionstampedKeyOperand,
  versionstampedValueOperand,
} from '../../packages/core/src/storage/foundationdb/mutation-operands.js';
import { openFoundationDb } from '../../packages/core/src/storage/foundationdb/open-foundationdb.js';

const b = (text: string) => Buffer.from(text);
const PREFIX = Buffer.from([0x15, 0x2a]);

// ---------------------------------------------------------------- keyspace

test('keyspace prefixes a caller key and strips the prefix back off', (t) => {
  const keyspace = new Keyspace(PREFIX);
  const packed = keyspace.pack(b('job/1'));
  t.deepEqual(packed, Buffer.concat([PREFIX, b('job/1')]));
  t.deepEqual(keyspace.unpack(packed), b('job/1'));
  t.deepEqual(keyspace.pack(new Uint8Array()), PREFIX);
});

test('keyspace keeps its own copy of the prefix', (t) => {
  const prefix = Buffer.from(PREFIX);
  const keyspace = new Keyspace(prefix);
  prefix[0] = 0xff;
  t.deepEqual(keyspace.pack(b('k')), Buffer.concat([PREFIX, b('k')]));
});

test('keyspace refuses to unpack a key outside its prefix', (t) => {
  const keyspace = new Keyspace(PREFIX);
  t.false(keyspace.contains(Buffer.from([0x15])));
  t.false(keyspace.contains(Buffer.from([0x15, 0x2b, 0x01])));
  // A key read back from outside the directory is the adapter's bug, never data.
  t.is(t.throws<FdbError>(() => keyspace.unpack(Buffer.from([0x15, 0x2b, 0x01])))?.code, FdbErrorCode.internal_error);
});

test('keyspace preserves key order, so ranges map to ranges', (t) => {
  const keyspace = new Keyspace(PREFIX);
  const keys = [b(''), b('\x00'), b('a'), b('a\x00'), b('ab'), Buffer.from([0xfe]), Buffer.from([0xff]), Buffer.from([0xff, 0xff])];
  for (let i = 1; i < keys.length; i++) {
    const lower = keys[i - 1]!;
    const upper = keys[i]!;
    t.true(Buffer.compare(keyspace.pack(lower), keyspace.pack(upper)) < 0, `${lower.toString('hex')} < ${upper.toString('hex')}`);
  }
});

// ---------------------------------------------------------------- mutation operands

test('a versionstamped key operand shifts the offset by the prefix length and appends it little-endian', (t) => {
  const keyspace = new Keyspace(PREFIX);
  const template = Buffer.concat([b('act/'), Buffer.alloc(10), b('/x')]);
  const operand = versionstampedKeyOperand(keyspace, template, 4);
  t.deepEqual(operand.subarray(0, operand.length - 4), Buffer.concat([PREFIX, template]));
  t.is(operand.readUInt32LE(operand.length - 4), 4 + PREFIX.length);
});

test('a versionstamped value operand keeps the offset (values are not prefixed)', (t) => {
  const template = Buffer.concat([b('v'), Buffer.alloc(10)]);
  const operand = versionstampedValueOperand(template, 1);
  t.deepEqual(operand.subarray(0, template.length), template);
  t.is(operand.readUInt32LE(template.length), 1);
  t.is(operand.length, template.length + 4);
});

test('a versionstamp offset that leaves no room for 10 bytes is a client_invalid_operation error', (t) => {
  const keyspace = new Keyspace(PREFIX);
  const template = Buffer.alloc(12);
  for (const offset of [3, -1, 1.5, Number.NaN]) {
    const error = t.throws(() => versionstampedKeyOperand(keyspace, template, offset), { instanceOf: FdbError });
    t.is(error?.code, FdbErrorCode.client_invalid_operation);
  }
  t.throws(() => versionstampedValueOperand(Buffer.alloc(9), 0), { instanceOf: FdbError });
  t.notThrows(() => versionstampedKeyOperand(keyspace, template, 2));
});

test('the add operand is an 8-byte little-endian two’s-complement integer', (t) => {
  t.deepEqual(addMutationOperand(1), Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]));
  t.deepEqual(addMutationOperand(0x0102), Buffer.from([2, 1, 0, 0, 0, 0, 0, 0]));
  t.deepEqual(addMutationOperand(-1), Buffer.alloc(8, 0xff));
  t.deepEqual(addMutationOperand(1n << 63n), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0x80]));
  t.deepEqual(addMutationOperand(-(1n << 63n)), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0x80]));
  t.deepEqual(addMutationOperand((1n << 64n) - 1n), Buffer.alloc(8, 0xff));
});

test('an add delta that is not a 64-bit integer is rejected with a typed error', (t) => {
  for (const delta of [1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1, 1n << 64n, -(1n << 63n) - 1n]) {
    const error = t.throws(() => addMutationOperand(delta), { instanceOf: FdbError });
    t.is(error?.code, FdbErrorCode.client_invalid_operation);
  }
  // JavaScript callers can pass anything.
  t.throws(() => addMutationOperand('1' as unknown as number), { instanceOf: FdbError });
});

// ---------------------------------------------------------------- loading the binding

test('a missing binding package becomes BackendUnavailableError with the install command', async (t) => {
  const error = await t.throwsAsync(loadBinding('jobtree-no-such-package-7c60ba0e'), {
    instanceOf: BackendUnavailableError,
  });
  t.is(error?.code, 'backend_unavailable');
  t.regex(error?.message ?? '', /jobtree-no-such-package-7c60ba0e/);
  t.regex(error?.message ?? '', /pnpm add/);
});

test('a module that is not node-foundationdb is refused as a binding', async (t) => {
  const error = await t.throwsAsync(loadBinding('node:path'), { instanceOf: BackendUnavailableError });
  t.regex(error?.message ?? '', /node-foundationdb/);
});

/** Whether the real binding (and so libfdb_c) loads on this machine; decides what the next tests expect. */
async function bindingLoads(): Promise<{ loads: true } | { loads: false; error: BackendUnavailableError }> {
  try {
    await loadBinding();
    return { loads: true };
  } catch (error) {
    if (error instanceof BackendUnavailableError) return { loads: false, error };
    throw error;
  }
}

test('without FoundationDB’s client library, loading the binding names libfdb_c as the cause', async (t) => {
  const probe = await bindingLoads();
  if (probe.loads) {
    t.pass('libfdb_c is installed here: the binding loads, nothing to check');
    return;
  }
  // The underlying loader error is quoted, and the fix names the library and the embedded alternative.
  const cause = probe.error.cause;
  t.true(cause instanceof Error);
  t.true(probe.error.message.includes((cause as Error).message.split('\n')[0] ?? ''));
  t.regex(probe.error.message, /libfdb_c/);
  t.regex(probe.error.message, /openDatabase\(\{ path \}\)/);
});

test('opening an unreachable cluster rejects with BackendUnavailableError naming the cause', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-fdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clusterFile = join(dir, 'fdb.cluster');
  // Nothing listens on port 1: a machine that has libfdb_c still cannot connect.
  writeFileSync(clusterFile, 'jobtree:unreachable@127.0.0.1:1\n');
  const probe = await bindingLoads();
  const error = await t.throwsAsync(openFoundationDb({ clusterFile, connectTimeoutMs: 300 }), {
    instanceOf: BackendUnavailableError,
  });
  t.regex(error?.message ?? '', probe.loads ? /did not answer within 300 ms|API version/ : /libfdb_c/);
});

test('openDatabase({ clusterFile }) goes to the FoundationDB adapter and rejects with its BackendUnavailableError', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-fdb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clusterFile = join(dir, 'fdb.cluster');
  writeFileSync(clusterFile, 'jobtree:unreachable@127.0.0.1:1\n');
  const probe = await bindingLoads();
  // openDatabase passes the adapter's own options through.
  const options = { clusterFile, connectTimeoutMs: 300 };
  const error = await t.throwsAsync(openDatabase(options), { instanceOf: BackendUnavailableError });
  t.regex(error?.message ?? '', probe.loads ? /did not answer|API version/ : /libfdb_c/);
  // Nothing was created on the local disk: the embedded engine was never opened.
  t.deepEqual(readdirSync(dir), ['fdb.cluster']);
});

test('a cluster file that does not exist is BackendUnavailableError', async (t) => {
  const clusterFile = join(tmpdir(), 'jobtree-no-such-dir-7c60ba0e', 'fdb.cluster');
  const error = await t.throwsAsync(openFoundationDb({ clusterFile }), { instanceOf: BackendUnavailableError });
  const probe = await bindingLoads();
  t.regex(error?.message ?? '', probe.loads ? /cannot be read/ : /libfdb_c/);
});

test('bad FoundationDB options are rejected before anything is loaded', async (t) => {
  for (const options of [{ clusterFile: '' }, { clusterFile: 'x', directory: [] }, { clusterFile: 'x', directory: [''] }]) {
    const error = await t.throwsAsync(openFoundationDb(options), { instanceOf: FdbError });
    t.is(error?.code, FdbErrorCode.invalid_option_value);
  }
  await t.throwsAsync(openFoundationDb(undefined as unknown as { clusterFile: string }), { instanceOf: FdbError });
});

// ---------------------------------------------------------------- the adapter over a fake binding

/** node-foundationdb's errors: an Error with a numeric code. */
class FakeBindingError extends Error {
  constructor(readonly code: number) {
    super(`fake FoundationDB error ${code}`);
  }
}

const FAKE_RETRYABLE = new Set([1007, 1009, 1020, 1021]);
const FAKE_STAMP = Buffer.from('00000000000000010000', 'hex');

interface AtomicOp {
  mutation: number;
  key: Buffer;
  operand: Buffer;
}

/**
 * Just enough of the binding's root-subspace transaction: committed data in
 * a Map, writes buffered until commit, and commit failures scripted by the
 * test. It records what the adapter sent so the mapping can be checked.
 */
class FakeCluster implements BindingDatabase {
  readonly data = new Map<string, Buffer>();
  readonly atomicOps: AtomicOp[] = [];
  readonly onErrorCodes: number[] = [];
  readonly rangeCalls: { start: Buffer; end: Buffer; options: BindingRangeOptions | undefined }[] = [];
  readonly watchedKeys: Buffer[] = [];
  readonly watchOptions: unknown[] = [];
  /** Keys (or range starts) read through the snapshot view. */
  readonly snapshotReads: Buffer[] = [];
  /** Codes the next commits fail with, in order. */
  commitFailures: number[] = [];
  commits = 0;
  closed = false;

  rawCreateTransaction(): BindingTransaction {
    const cluster = this;
    let pending = new Map<string, Buffer | undefined>();
    // A watch fails with its transaction's commit error (FoundationDB's rule).
    const watches: ((error: Error) => void)[] = [];
    const tn: BindingTransaction = {
      async get(key) {
        const hex = key.toString('hex');
        return pending.has(hex) ? pending.get(hex) : cluster.data.get(hex);
      },
      async getRangeAll(start, end, options) {
        cluster.rangeCalls.push({ start, end, options });
        const merged = new Map(cluster.data);
        for (const [hex, value] of pending) {
          if (value === undefined) merged.delete(hex);
          else merged.set(hex, value);
        }
        let pairs = [...merged]
          .map(([hex, value]): [Buffer, Buffer] => [Buffer.from(hex, 'hex'), value])
          .filter(([key]) => Buffer.compare(key, start) >= 0 && Buffer.compare(key, end) < 0)
          .sort(([x], [y]) => Buffer.compare(x, y));
        if (options?.reverse) pairs = pairs.reverse();
        return options?.limit ? pairs.slice(0, options.limit) : pairs;
      },
      set(key, value) {
        pending.set(key.toString('hex'), value);
      },
      clear(key) {
        pending.set(key.toString('hex'), undefined);
      },
      clearRange(start, end) {
        for (const hex of cluster.data.keys()) {
          const key = Buffer.from(hex, 'hex');
          if (Buffer.compare(key, start) >= 0 && Buffer.compare(key, end) < 0) pending.set(hex, undefined);
        }
      },
      addReadConflictRange() {},
      addReadConflictKey() {},
      addWriteConflictKey() {},
      atomicOpNative(mutation, key, operand) {
        cluster.atomicOps.push({ mutation, key, operand });
      },
      watch(key, options): BindingWatch {
        cluster.watchedKeys.push(key);
        cluster.watchOptions.push(options);
        let fail: (error: Error) => void = () => {};
        const promise = new Promise<boolean>((_, reject) => {
          fail = reject;
        });
        watches.push(fail);
        // As the binding with throwAllErrors: cancel rejects with operation_cancelled.
        return { promise, cancel: () => fail(new FakeBindingError(1101)) };
      },
      snapshot() {
        // The binding's snapshot view: same transaction, reads without conflicts.
        return {
          ...tn,
          get: (key: Buffer) => {
            cluster.snapshotReads.push(key);
            return tn.get(key);
          },
          getRangeAll: (start: Buffer, end: Buffer, options?: BindingRangeOptions) => {
            cluster.snapshotReads.push(start);
            return tn.getRangeAll(start, end, options);
          },
        };
      },
      getVersionstamp() {
        return { promise: Promise.resolve(FAKE_STAMP) };
      },
      async rawCommit() {
        const failure = cluster.commitFailures.shift();
        if (failure !== undefined) {
          for (const fail of watches.splice(0)) fail(new FakeBindingError(failure));
          throw new FakeBindingError(failure);
        }
        for (const [hex, value] of pending) {
          if (value === undefined) cluster.data.delete(hex);
          else cluster.data.set(hex, value);
        }
        pending = new Map();
        cluster.commits++;
      },
      async rawOnError(code) {
        cluster.onErrorCodes.push(code);
        if (!FAKE_RETRYABLE.has(code)) throw new FakeBindingError(code);
        pending = new Map();
      },
      rawCancel() {
        pending = new Map();
      },
    };
    return tn;
  }

  close(): void {
    this.closed = true;
  }
}

function fakeDatabase(): { cluster: FakeCluster; db: FoundationDbDatabase } {
  const cluster = new FakeCluster();
  return { cluster, db: new FoundationDbDatabase(cluster, new Keyspace(PREFIX)) };
}

const clusterKey = (key: string) => Buffer.concat([PREFIX, b(key)]).toString('hex');

test('the adapter stores every key under the directory prefix and reads it back un-prefixed', async (t) => {
  const { cluster, db } = fakeDatabase();
  t.is(db.kind, 'foundationdb');
  await db.doTransaction((tx) => {
    tx.set(b('a'), b('1'));
    tx.set(new Uint8Array([0x62]), b('2'));
  });
  t.deepEqual([...cluster.data.keys()].sort(), [clusterKey('a'), clusterKey('b')]);
  const read = await db.doTransaction(async (tx) => ({
    a: await tx.get(b('a')),
    missing: await tx.get(b('zz')),
    range: await tx.getRange(b('a'), b('c')),
  }));
  t.deepEqual(read.a, b('1'));
  t.is(read.missing, undefined);
  t.deepEqual(read.range, [
    { key: b('a'), value: b('1') },
    { key: b('b'), value: b('2') },
  ]);
});

test('getRange maps its bounds into the prefix and passes limit and reverse through', async (t) => {
  const { cluster, db } = fakeDatabase();
  await db.doTransaction((tx) => {
    for (const key of ['k1', 'k2', 'k3']) tx.set(b(key), b(key));
  });
  const range = await db.doTransaction((tx) => tx.getRange(b('k'), b('l'), { limit: 2, reverse: true }));
  t.deepEqual(
    range.map((pair) => pair.key.toString()),
    ['k3', 'k2'],
  );
  const call = cluster.rangeCalls.at(-1);
  t.deepEqual(call?.start, Buffer.concat([PREFIX, b('k')]));
  t.deepEqual(call?.end, Buffer.concat([PREFIX, b('l')]));
  t.deepEqual(call?.options, { limit: 2, reverse: true });
  // 0 means no limit, as in FoundationDB.
  t.is((await db.doTransaction((tx) => tx.getRange(b('k'), b('l'), { limit: 0 }))).length, 3);
  t.deepEqual(cluster.rangeCalls.at(-1)?.options, { limit: 0, reverse: false });
  const negative = await t.throwsAsync(
    db.doTransaction((tx) => tx.getRange(b('k'), b('l'), { limit: -1 })),
    { instanceOf: FdbError },
  );
  t.is(negative?.code, FdbErrorCode.invalid_option_value);
  const inverted = await t.throwsAsync(db.doTransaction((tx) => tx.getRange(b('l'), b('k'))), { instanceOf: FdbError });
  t.is(inverted?.code, FdbErrorCode.inverted_range);
});

test('snapshot reads go through the binding snapshot view, with the prefix', async (t) => {
  const { cluster, db } = fakeDatabase();
  await db.doTransaction((tx) => tx.set(b('s'), b('v')));
  const [value, range] = await db.doTransaction(async (tx) => [
    await tx.snapshot().get(b('s')),
    await tx.snapshot().getRange(b('a'), b('z')),
  ]);
  t.deepEqual(value, b('v'));
  t.deepEqual(range, [{ key: b('s'), value: b('v') }]);
  t.deepEqual(cluster.snapshotReads, [Buffer.concat([PREFIX, b('s')]), Buffer.concat([PREFIX, b('a')])]);
  // Plain reads do not use the snapshot view.
  await db.doTransaction((tx) => tx.get(b('s')));
  t.is(cluster.snapshotReads.length, 2);
});

test('clearRange clears only caller keys inside the range and refuses an inverted one', async (t) => {
  const { db } = fakeDatabase();
  await db.doTransaction((tx) => {
    for (const key of ['a', 'b', 'c']) tx.set(b(key), b(key));
  });
  await db.doTransaction((tx) => tx.clearRange(b('a'), b('c')));
  // `\xff` is the end of the caller's keyspace: allowed as a range end.
  const left = await db.doTransaction((tx) => tx.getRange(b(''), Buffer.from([0xff])));
  t.deepEqual(
    left.map((pair) => pair.key.toString()),
    ['c'],
  );
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.clearRange(b('c'), b('a'))), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.inverted_range);
});

test('atomicAdd and versionstamped writes become FoundationDB atomic ops with mapped operands', async (t) => {
  const { cluster, db } = fakeDatabase();
  const template = Buffer.concat([b('q/'), Buffer.alloc(10)]);
  await db.doTransaction((tx) => {
    tx.atomicAdd(b('counter'), -2);
    tx.setVersionstampedKey(template, 2, b('job'));
    tx.setVersionstampedValue(b('last'), Buffer.alloc(10), 0);
  });
  const [add, stampedKey, stampedValue] = cluster.atomicOps;
  t.deepEqual(add, { mutation: MutationType.add, key: Buffer.concat([PREFIX, b('counter')]), operand: addMutationOperand(-2) });
  t.is(stampedKey?.mutation, MutationType.setVersionstampedKey);
  t.deepEqual(stampedKey?.key, versionstampedKeyOperand(new Keyspace(PREFIX), template, 2));
  t.deepEqual(stampedKey?.operand, b('job'));
  t.is(stampedValue?.mutation, MutationType.setVersionstampedValue);
  t.deepEqual(stampedValue?.key, Buffer.concat([PREFIX, b('last')]));
  t.deepEqual(stampedValue?.operand, versionstampedValueOperand(Buffer.alloc(10), 0));
});

test('keys and values that are not bytes or are too large get typed errors carrying the FoundationDB code', async (t) => {
  const { cluster, db } = fakeDatabase();
  const cases: [string, number, (tx: import('../../packages/core/src/storage/interfaces.js').Transaction) => unknown][] = [
    ['string key', FdbErrorCode.client_invalid_operation, (tx) => tx.set('a' as unknown as Buffer, b('v'))],
    ['null value', FdbErrorCode.client_invalid_operation, (tx) => tx.set(b('a'), null as unknown as Buffer)],
    ['oversized key', FdbErrorCode.key_too_large, (tx) => tx.set(Buffer.alloc(10_001), b('v'))],
    ['oversized value', FdbErrorCode.value_too_large, (tx) => tx.set(b('a'), Buffer.alloc(100_001))],
    ['oversized read key', FdbErrorCode.key_too_large, (tx) => tx.get(Buffer.alloc(10_001))],
    ['number read key', FdbErrorCode.client_invalid_operation, (tx) => tx.get(1 as unknown as Buffer)],
    ['system key', FdbErrorCode.key_outside_legal_range, (tx) => tx.set(Buffer.from([0xff, 0x2f]), b('v'))],
    ['stamped value too short', FdbErrorCode.client_invalid_operation, (tx) => tx.setVersionstampedValue(b('k'), Buffer.alloc(9), 0)],
  ];
  for (const [name, code, body] of cases) {
    const error = await t.throwsAsync(db.doTransaction(body), { instanceOf: FdbError }, name);
    t.is(error?.code, code, name);
  }
  t.is(cluster.data.size, 0);
  // Bad input is never retried: on_error hears of it once and refuses.
  t.true(cluster.onErrorCodes.every((code) => !FAKE_RETRYABLE.has(code)));
});

test('a retryable commit error runs the body again through on_error', async (t) => {
  const { cluster, db } = fakeDatabase();
  cluster.commitFailures = [1020, 1007];
  let runs = 0;
  const result = await db.doTransaction((tx) => {
    runs++;
    tx.set(b('r'), b(String(runs)));
    return runs;
  });
  t.is(result, 3);
  t.is(runs, 3);
  t.deepEqual(cluster.onErrorCodes, [1020, 1007]);
  t.deepEqual(cluster.data.get(clusterKey('r')), b('3'));
});

test('a non-retryable binding error is rethrown as FdbError with the same code', async (t) => {
  const { cluster, db } = fakeDatabase();
  cluster.commitFailures = [2101];
  let runs = 0;
  const error = await t.throwsAsync(
    db.doTransaction((tx) => {
      runs++;
      tx.set(b('big'), b('v'));
    }),
    { instanceOf: FdbError },
  );
  t.is(error?.code, FdbErrorCode.transaction_too_large);
  t.true(error?.cause instanceof FakeBindingError);
  t.is(runs, 1);
});

test('the retry loop gives up after retryLimit retries with the last error', async (t) => {
  const { cluster, db } = fakeDatabase();
  cluster.commitFailures = [1020, 1020, 1020, 1020];
  let runs = 0;
  const error = await t.throwsAsync(
    db.doTransaction(
      (tx) => {
        runs++;
        tx.set(b('x'), b('y'));
      },
      { retryLimit: 2 },
    ),
    { instanceOf: FdbError },
  );
  t.is(error?.code, FdbErrorCode.not_committed);
  t.is(runs, 3);
  t.is(cluster.commits, 0);
});

test('a retryable FdbError thrown by the body itself is retried', async (t) => {
  const { db } = fakeDatabase();
  let runs = 0;
  const result = await db.doTransaction(() => {
    runs++;
    if (runs < 3) throw new FdbError(FdbErrorCode.not_committed, 'simulated');
    return 'done';
  });
  t.is(result, 'done');
  t.is(runs, 3);
});

test('an error that is not a FoundationDB error passes through untouched and is not retried', async (t) => {
  const { cluster, db } = fakeDatabase();
  const thrown = new TypeError('user bug');
  let runs = 0;
  const error = await t.throwsAsync(
    db.doTransaction(() => {
      runs++;
      throw thrown;
    }),
  );
  t.is(error, thrown);
  t.is(runs, 1);
  t.deepEqual(cluster.onErrorCodes, []);
});

test('a transaction kept past its commit refuses further use', async (t) => {
  const { db } = fakeDatabase();
  let kept: import('../../packages/core/src/storage/interfaces.js').Transaction | undefined;
  await db.doTransaction((tx) => {
    kept = tx;
    tx.set(b('k'), b('v'));
  });
  const error = t.throws(() => kept?.set(b('k'), b('w')), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.client_invalid_operation);
  await t.throwsAsync(kept!.get(b('k')), { instanceOf: FdbError });
});

test('the versionstamp of a writing transaction is available after doTransaction returns', async (t) => {
  const { db } = fakeDatabase();
  let tx: import('../../packages/core/src/storage/interfaces.js').Transaction | undefined;
  await db.doTransaction((inner) => {
    tx = inner;
    inner.set(b('k'), b('v'));
  });
  t.deepEqual(await tx!.getVersionstamp(), FAKE_STAMP);
});

test('a watch is set on the prefixed key and cancel resolves it false', async (t) => {
  const { cluster, db } = fakeDatabase();
  const watch = await db.doTransaction((tx) => tx.watch(b('w')));
  t.deepEqual(cluster.watchedKeys, [Buffer.concat([PREFIX, b('w')])]);
  t.deepEqual(cluster.watchOptions, [{ throwAllErrors: true }]);
  watch.cancel();
  t.false(await watch.promise);
});

test('a watch of a transaction that fails to commit rejects with the commit error as FdbError', async (t) => {
  const { cluster, db } = fakeDatabase();
  cluster.commitFailures = [1020];
  let first: { promise: Promise<boolean> } | undefined;
  await db.doTransaction((tx) => {
    const watch = tx.watch(b('w'));
    first ??= watch;
  });
  const error = await t.throwsAsync(first!.promise, { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.not_committed);
});

test('on FoundationDB the caller key limit is 10,000 bytes minus the directory prefix', async (t) => {
  const keyspace = new Keyspace(PREFIX);
  t.is(keyspace.maxKeyBytes, 10_000 - PREFIX.length);
  t.notThrows(() => keyspace.pack(Buffer.alloc(keyspace.maxKeyBytes)));
  const error = t.throws(() => keyspace.pack(Buffer.alloc(keyspace.maxKeyBytes + 1)), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.key_too_large);
  t.regex(error?.message ?? '', /directory prefix/);
});

test('the adapter takes keys up to its maxKeyBytes (10,000 minus the prefix) and refuses longer ones', async (t) => {
  const { cluster, db } = fakeDatabase();
  t.is(db.maxKeyBytes, 10_000 - PREFIX.length);
  const longest = Buffer.alloc(db.maxKeyBytes, 0x61);
  await db.doTransaction((tx) => tx.set(longest, b('v')));
  t.is(Buffer.from(cluster.data.keys().next().value ?? '', 'hex').length, 10_000);
  t.deepEqual(await db.doTransaction((tx) => tx.get(longest)), b('v'));
  const error = await t.throwsAsync(
    db.doTransaction((tx) => tx.set(Buffer.alloc(db.maxKeyBytes + 1, 0x61), b('v')), { retryLimit: 0 }),
    { instanceOf: FdbError },
  );
  t.is(error?.code, FdbErrorCode.key_too_large);
});

test('a closed adapter refuses new transactions and closes the binding database once', async (t) => {
  const { cluster, db } = fakeDatabase();
  await db.close();
  await db.close();
  t.true(cluster.closed);
  const error = await t.throwsAsync(db.doTransaction(() => 1), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.client_invalid_operation);
});
