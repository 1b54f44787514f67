// Behaviour only the embedded engine has (or only it can show without a
// cluster): durability across kill -9, the single-owner lock, persisted
// versions, group commit, and the 5-second life with an injected clock.

import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { DatabaseLockedError, FdbError, FdbErrorCode, type StoreDurability, openDatabase } from '@jobtree/core';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { versionOfStamp } from '../../packages/core/src/storage/versionstamp.js';
import { deferred } from '../deferred.js';
import { rollBackToLastFlush } from './last-flushed-snapshot.js';

const b = (text: string) => Buffer.from(text);
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).pathname;

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-embedded-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function startChild(script: string, dir: string, ...args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import=tsx', fixture(script), dir, ...args], {
    cwd: new URL('../..', import.meta.url).pathname,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Resolves once the child has printed `count` lines matching `pattern`; collects every match. */
function waitForLines(child: ChildProcess, pattern: RegExp, count: number, into: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`child printed only ${into.length} lines in 60 s`)), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited early with ${code}`));
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (pattern.test(line)) into.push(line);
      if (into.length >= count) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/**
 * Kills a commit loop with `writers` clients after 400 acks, then checks
 * every acknowledged commit is there whole. With deferred durability, also
 * what an OS crash would leave: the store as of lmdb's last flushed
 * transaction (see `checkLastFlushedSnapshot`).
 */
async function checkKillMidFlight(t: ExecutionContext, writers: number, durability: StoreDurability = 'flush'): Promise<void> {
  const dir = tempDir(t);
  const child = startChild('commit-loop.ts', dir, String(writers), durability);
  t.teardown(() => child.kill('SIGKILL'));
  const acked: string[] = [];
  await waitForLines(child, /^acked \d+$/, 400, acked);
  child.stdout?.removeAllListeners('data');
  // keep collecting acks printed up to the kill
  child.stdout?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (/^acked \d+$/.test(line)) acked.push(line);
  });
  child.kill('SIGKILL');
  await killed(child);
  t.is(child.signalCode, 'SIGKILL');
  t.true(existsSync(join(dir, 'jobtree.lock')), 'the dead owner left its lock behind');
  const flushedView = durability === 'deferred' ? tempDir(t) : undefined;
  if (flushedView !== undefined) cpSync(dir, flushedView, { recursive: true });

  const db = await openDatabase({ path: dir }); // takes over the stale lock
  try {
    const { a, bKeys, log } = await db.doTransaction(async (tx) => ({
      a: await tx.getRange(b('a/'), b('a0')),
      bKeys: await tx.getRange(b('b/'), b('b0')),
      log: await tx.getRange(b('s/'), b('s0')),
    }));
    const names = (entries: Array<{ key: Buffer }>) => entries.map((e) => e.key.subarray(2).toString());
    t.deepEqual(names(a), names(bKeys), 'each commit wrote a/<n> and b/<n> together');
    t.is(log.length, a.length, 'and one log entry');
    const present = new Set(names(a));
    for (const line of acked) {
      const n = String(Number(line.slice('acked '.length))).padStart(8, '0');
      t.true(present.has(n), `acknowledged commit ${n} survived`);
    }
    t.true(present.size >= 400);
    // versions keep increasing across the crash
    const { stamp } = await db.doTransaction((tx) => {
      tx.setVersionstampedKey(Buffer.concat([b('s/'), Buffer.alloc(10)]), 2, b('after'));
      return { stamp: tx.getVersionstamp() };
    });
    const last = log[log.length - 1]?.key.subarray(2) ?? Buffer.alloc(10);
    t.true(Buffer.compare(await stamp, last) > 0);
    if (flushedView !== undefined) await checkLastFlushedSnapshot(
        t,
        flushedView,
        log.map((entry) => entry.value.toString()),
      );
  } finally {
    await db.close();
  }
}

/**
 * Opens a copy of a killed store as lmdb opens it after an OS restart:
 * `safeRestore` makes it take the last flushed transaction even on the same
 * boot. The store must open and read whole, every commit in it complete,
 * and hold the first commits of `committed` (the log, in commit order), none
 * missing in between.
 */
async function checkLastFlushedSnapshot(t: ExecutionContext, dir: string, committed: string[]): Promise<void> {
  await rollBackToLastFlush(dir);
  const db = await openDatabase({ path: dir });
  try {
    const { a, bKeys, log } = await db.doTransaction(async (tx) => ({
      a: await tx.getRange(b('a/'), b('a0')),
      bKeys: await tx.getRange(b('b/'), b('b0')),
      log: await tx.getRange(b('s/'), b('s0')),
    }));
    const names = (entries: Array<{ key: Buffer }>) => entries.map((e) => e.key.subarray(2).toString());
    t.deepEqual(names(a), names(bKeys), 'in the flushed snapshot, each commit wrote a/<n> and b/<n> together');
    const flushed = log.map((entry) => entry.value.toString());
    t.deepEqual(flushed, committed.slice(0, flushed.length), 'the flushed snapshot holds the first commits, in order');
    t.is(a.length, flushed.length);
  } finally {
    await db.close();
  }
}

test('after kill -9 mid-flight, every acknowledged commit is there and none is half-applied', (t) => checkKillMidFlight(t, 16));

test('after kill -9, every acknowledged lone commit (one client, written on the main thread) is there and none is half-applied', (t) =>
  checkKillMidFlight(t, 1));

test('with deferred durability, after kill -9 mid-flight every acknowledged commit is there, and the last flushed snapshot is whole', (t) =>
  checkKillMidFlight(t, 16, 'deferred'));

test('with deferred durability, after kill -9 every acknowledged lone commit is there, and the last flushed snapshot is whole', (t) =>
  checkKillMidFlight(t, 1, 'deferred'));

test('a second process gets DatabaseLockedError naming the path and the owner pid, and takes over once it dies', async (t) => {
  const dir = tempDir(t);
  const child = startChild('hold-open.ts', dir);
  t.teardown(() => child.kill('SIGKILL'));
  await waitForLines(child, /^ready \d+$/, 1, []);
  const error = await t.throwsAsync(openDatabase({ path: dir }), { instanceOf: DatabaseLockedError });
  t.is(error?.ownerPid, child.pid ?? -1);
  t.true(error?.message.includes(String(child.pid)));
  t.true(error?.message.includes(error.path));
  t.is(readFileSync(join(dir, 'jobtree.lock'), 'utf8').trim(), String(child.pid));
  child.kill('SIGKILL');
  await killed(child);
  const db = await openDatabase({ path: dir });
  t.is(readFileSync(join(dir, 'jobtree.lock'), 'utf8').trim(), String(process.pid));
  await db.close();
  t.false(existsSync(join(dir, 'jobtree.lock')), 'close releases the lock');
});

test('a second open of the same directory in one process fails until the first is closed', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  const error = await t.throwsAsync(openDatabase({ path: `${dir}/.` }), { instanceOf: DatabaseLockedError });
  t.is(error?.ownerPid, process.pid);
  // 'database_locked' means this error only: no FdbError code is named so.
  t.is(error?.code, 'database_locked');
  t.false(Object.hasOwn(FdbErrorCode, 'database_locked'));
  await db.close();
  const again = await openDatabase({ path: dir });
  await again.close();
});

test('data and versionstamps persist across close and reopen, and versions only grow', async (t) => {
  const dir = tempDir(t);
  let db = await openDatabase({ path: dir });
  const first = await db.doTransaction((tx) => {
    tx.set(b('k'), b('v'));
    tx.setVersionstampedKey(Buffer.concat([b('s/'), Buffer.alloc(10)]), 2, b('1'));
    return { stamp: tx.getVersionstamp() };
  });
  const firstStamp = await first.stamp;
  await db.close();
  db = await openDatabase({ path: dir });
  const second = await db.doTransaction(async (tx) => {
    tx.setVersionstampedKey(Buffer.concat([b('s/'), Buffer.alloc(10)]), 2, b('2'));
    return { value: await tx.get(b('k')), stamp: tx.getVersionstamp() };
  });
  t.is(second.value?.toString(), 'v');
  t.true(Buffer.compare(await second.stamp, firstStamp) > 0);
  const log = await db.doTransaction((tx) => tx.getRange(b('s/'), b('s0')));
  t.deepEqual(
    log.map((e) => e.value.toString()),
    ['1', '2'],
  );
  await db.close();
});

test('a batch that changes no key (only write-conflict keys) commits with a versionstamp, and later commits go on', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  try {
    await db.doTransaction((tx) => tx.set(b('k'), b('1')));
    let previous: Buffer = Buffer.alloc(0);
    for (let i = 0; i < 3; i++) {
      // Inside the recorded-version lease such a batch gives lmdb a transaction that changes no page.
      const { stamp } = await db.doTransaction((tx) => {
        tx.addWriteConflictKey(b('k'));
        return { stamp: tx.getVersionstamp() };
      });
      const current = await stamp;
      t.true(Buffer.compare(current, previous) > 0);
      previous = current;
    }
    await db.doTransaction((tx) => tx.set(b('k'), b('2')));
    t.is((await db.doTransaction((tx) => tx.get(b('k'))))?.toString(), '2');
  } finally {
    await db.close();
  }
});

// Serial: it sets the process clock back, which concurrent tests must not see.
test.serial('after a reopen, versions stay above every earlier one even when the clock has gone back', async (t) => {
  const dir = tempDir(t);
  let db = await openDatabase({ path: dir });
  let last: Buffer = Buffer.alloc(0);
  for (let i = 0; i < 3; i++) {
    const { stamp } = await db.doTransaction((tx) => {
      tx.set(b(`k${i}`), b('v'));
      return { stamp: tx.getVersionstamp() };
    });
    last = await stamp;
  }
  await db.close();
  const realNow = Date.now;
  Date.now = () => realNow() - 3_600_000;
  try {
    db = await openDatabase({ path: dir });
    const { stamp } = await db.doTransaction((tx) => {
      tx.set(b('after'), b('v'));
      return { stamp: tx.getVersionstamp() };
    });
    t.true(Buffer.compare(await stamp, last) > 0);
    await db.close();
  } finally {
    Date.now = realNow;
  }
});

test('concurrent commits share one commit version (one lmdb write, one fsync) and survive reopen', async (t) => {
  const dir = tempDir(t);
  let db = await openDatabase({ path: dir });
  const stamps = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const { stamp } = await db.doTransaction((tx) => {
        tx.set(b(`g/${String(i).padStart(4, '0')}`), b(String(i)));
        return { stamp: tx.getVersionstamp() };
      });
      return stamp;
    }),
  );
  const versions = new Set(stamps.map((stamp) => versionOfStamp(stamp)));
  t.true(versions.size < 20, `200 commits used ${versions.size} batches`);
  t.is(new Set(stamps.map((s) => s.toString('hex'))).size, 200, 'batch order keeps stamps unique');
  await db.close();
  db = await openDatabase({ path: dir });
  const all = await db.doTransaction((tx) => tx.getRange(b('g/'), b('g0')));
  t.is(all.length, 200);
  await db.close();
});

test('transactions that commit in one event turn are written as one batch, whatever their number', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  // All issued in one turn: the first starts lmdb's write, the others join before it is filled.
  const stamps = await Promise.all(
    Array.from({ length: 500 }, async (_, i) => {
      const { stamp } = await db.doTransaction((tx) => {
        tx.set(b(`t/${i}`), b('v'));
        return { stamp: tx.getVersionstamp() };
      });
      return stamp;
    }),
  );
  t.is(new Set(stamps.map((stamp) => versionOfStamp(stamp))).size, 1);
  await db.close();
});

test.serial('a batch whose lmdb write fails while being filled rejects its commits with commit_unknown_result (1021), and later commits go on', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  // Two transactions in one batch: the next batch is not a lone commit, so it takes lmdb's asynchronous write.
  await Promise.all([db.doTransaction((tx) => tx.set(b('before'), b('1'))), db.doTransaction((tx) => tx.set(b('before2'), b('1')))]);
  const write = LmdbStore.prototype.write;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
  });
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    LmdbStore.prototype.write = write;
    return write.call(this, version, () => {
      fill();
      throw new Error('injected failure while filling the lmdb write');
    });
  };
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.set(b('lost'), b('1')), { retryLimit: 0 }));
  t.true(FdbError.is(error, 'commit_unknown_result'), String(error));
  await db.doTransaction((tx) => tx.set(b('after'), b('1')));
  const keys = await db.doTransaction(async (tx) => (await tx.getRange(b('a'), b('z'))).map((e) => e.key.toString()));
  // Unknown means either: the batch's changes were handed to lmdb as the transaction joined it.
  t.deepEqual(
    keys.filter((key) => key !== 'lost'),
    ['after', 'before', 'before2'],
  );
  await db.close();
});

test.serial('a lone commit is written on the calling thread and durable when it resolves; a stream of concurrent commits keeps the asynchronous write', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  const write = LmdbStore.prototype.write;
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
    LmdbStore.prototype.writeNow = writeNow;
  });
  const calls: string[] = [];
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    calls.push('async');
    return write.call(this, version, fill);
  };
  LmdbStore.prototype.writeNow = function (this: LmdbStore, version, fill) {
    calls.push('now');
    writeNow.call(this, version, fill);
  };
  // One client committing at a time.
  for (let i = 0; i < 3; i++) await db.doTransaction((tx) => tx.set(b(`lone/${i}`), b('v')));
  t.deepEqual(calls, ['now', 'now', 'now']);
  // Concurrent clients: the first batch (after a lone one) is written in place, the ones after a full batch are not.
  calls.length = 0;
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 4 }, (_, i) => db.doTransaction((tx) => tx.set(b(`many/${round}/${i}`), b('v')))));
  }
  t.deepEqual(calls, ['now', 'async', 'async']);
  const count = await db.doTransaction(async (tx) => (await tx.getRange(b('lone/'), b('many0'))).length);
  t.is(count, 3 + 12);
  await db.close();
});

test.serial('a lone commit whose write fails rejects with operation_failed (1000), leaves nothing in the store, and later commits go on', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  await db.doTransaction((tx) => tx.set(b('before'), b('1')));
  const writeNow = LmdbStore.prototype.writeNow;
  t.teardown(() => {
    LmdbStore.prototype.writeNow = writeNow;
  });
  LmdbStore.prototype.writeNow = function (this: LmdbStore, version, fill) {
    LmdbStore.prototype.writeNow = writeNow;
    writeNow.call(this, version, () => {
      fill();
      throw new Error('injected failure while filling the lmdb write');
    });
  };
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.set(b('lost'), b('1')), { retryLimit: 0 }));
  t.true(FdbError.is(error, 'operation_failed'), String(error));
  await db.doTransaction((tx) => tx.set(b('after'), b('1')));
  const keys = await db.doTransaction(async (tx) => (await tx.getRange(b('a'), b('z'))).map((e) => e.key.toString()));
  t.deepEqual(keys, ['after', 'before']);
  await db.close();
});

test('a second store write while one waits for its contents is internal_error (4100), and the first still commits', async (t) => {
  const store = new LmdbStore(tempDir(t));
  const base = store.snapshot(store.lastVersion());
  const first = store.write(1, () => ({ changes: [{ key: b('k'), value: b('v') }], base }));
  const second = t.throws<FdbError>(() => store.write(2, () => ({ changes: [], base })));
  t.is(second?.code, FdbErrorCode.internal_error);
  t.true(await first.committed);
  base.end();
  await store.close();
});

test('a commit is not visible to other transactions before it is acknowledged', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  let acknowledged = false;
  const writing = db.doTransaction((tx) => tx.set(b('k'), b('v'))).then(() => {
    acknowledged = true;
  });
  // Poll from fresh transactions until the writer is acknowledged: a read
  // that sees the value must come after the commit was published (durable).
  let sawBeforeAck = false;
  while (!acknowledged) {
    const value = await db.doTransaction((tx) => tx.get(b('k')));
    const { durableVersion } = db as EmbeddedDatabase;
    if (value !== undefined && durableVersion === 0) sawBeforeAck = true;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await writing;
  t.false(sawBeforeAck);
  t.true((db as EmbeddedDatabase).durableVersion > 0);
  await db.close();
});

test('a retry after a conflict waits for the commit it lost to, so a hot key costs one retry per transaction', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  let attempts = 0;
  await Promise.all(
    Array.from({ length: 30 }, () =>
      db.doTransaction(
        async (tx) => {
          attempts++;
          const n = Number((await tx.get(b('hot')))?.toString() ?? '0');
          tx.set(b('hot'), b(String(n + 1)));
        },
        { retryLimit: 1 },
      ),
    ),
  );
  t.is((await db.doTransaction((tx) => tx.get(b('hot'))))?.toString(), '30');
  t.true(attempts <= 60, `${attempts} attempts for 30 commits`);
  await db.close();
});

test('reads and commits more than 5 s after the read version fail with transaction_too_old (1007)', async (t) => {
  const dir = tempDir(t);
  let now = 1_000_000;
  const db = EmbeddedDatabase.open({ path: dir, now: () => now });
  try {
    await t.throwsAsync(
      db.doTransaction(
        async (tx) => {
          await tx.get(b('k'));
          now += 5_001;
          await tx.get(b('k'));
        },
        { retryLimit: 0 },
      ),
      { instanceOf: FdbError, message: /transaction_too_old \(1007\)/ },
    );
    await t.throwsAsync(
      db.doTransaction(
        async (tx) => {
          await tx.get(b('k'));
          tx.set(b('k'), b('late'));
          now += 5_001;
        },
        { retryLimit: 0 },
      ),
      { instanceOf: FdbError, message: /transaction_too_old/ },
    );
    t.is(await db.doTransaction((tx) => tx.get(b('k'))), undefined);
    // doTransaction retries 1007 with a fresh read version
    let attempts = 0;
    await db.doTransaction(async (tx) => {
      attempts++;
      await tx.get(b('k'));
      if (attempts === 1) now += 6_000;
      tx.set(b('k'), b('retried'));
    });
    t.is(attempts, 2);
    // a write-only transaction has no read version to age
    await db.doTransaction((tx) => {
      tx.set(b('w'), b('blind'));
      now += 10_000;
    });
    t.is((await db.doTransaction((tx) => tx.get(b('w'))))?.toString(), 'blind');
  } finally {
    await db.close();
  }
});

test('a read-only transaction commits however old its read version, like FoundationDB\'s client', async (t) => {
  const dir = tempDir(t);
  let now = 1_000_000;
  const db = EmbeddedDatabase.open({ path: dir, now: () => now });
  try {
    await db.doTransaction((tx) => tx.set(b('k'), b('v')));
    let attempts = 0;
    const value = await db.doTransaction(
      async (tx) => {
        attempts++;
        const read = await tx.get(b('k'));
        now += 6_000;
        return read;
      },
      { retryLimit: 0 },
    );
    t.is(value?.toString(), 'v');
    t.is(attempts, 1);
  } finally {
    await db.close();
  }
});

test('the conflict log forgets batches at or below the oldest read version in use, or past the transaction life', (t) => {
  const log = new ConflictLog(0);
  for (const [version, key, durableAt] of [
    [10, 'a', 1_000],
    [20, 'b', 2_000],
    [30, 'c', 3_000],
  ] as const) {
    const batch = log.open(version);
    log.recordKey(batch, b(key), key);
    batch.seal();
    batch.durableAt = durableAt;
  }
  // Nobody reads below 20: batches 10 and 20 go, 30 stays for readers at 20.
  log.forget(0, 20);
  t.is(log.size, 1);
  t.false(log.covers(10));
  t.true(log.covers(20));
  t.true(log.conflicts(20, ['c'], []));
  t.false(log.conflicts(20, ['a', 'b'], []));
  // A reader at 20 still holds batch 30 back, until it is past the life.
  log.forget(3_000, 20);
  t.is(log.size, 1);
  log.forget(3_001, 20);
  t.is(log.size, 0);
  t.false(log.conflicts(30, ['c'], []));
});

test('a long transaction still gets its conflict (1020) after a hundred later batches were published and forgotten around it', async (t) => {
  const dir = tempDir(t);
  // A stopped clock: on a loaded machine the 200 commits below can take longer than the 5-second
  // life, and the long transaction would then fail as too old (1007) before its conflict is checked.
  const db = EmbeddedDatabase.open({ path: dir, now: () => 0 });
  try {
    await db.doTransaction((tx) => tx.set(b('k'), b('0')));
    const { promise: released, resolve: release } = deferred();
    const { promise: hasRead, resolve: read } = deferred();
    const long = db.doTransaction(
      async (tx) => {
        await tx.get(b('k'));
        read();
        await released;
        tx.set(b('k'), b('long'));
      },
      { retryLimit: 0 },
    );
    await hasRead;
    // One batch each, read by short transactions that end at once.
    for (let i = 0; i < 100; i++) {
      await db.doTransaction(async (tx) => {
        await tx.get(b(`other/${i}`));
        tx.set(b(`other/${i}`), b('x'));
      });
    }
    await db.doTransaction((tx) => tx.set(b('k'), b('newer')));
    for (let i = 0; i < 100; i++) await db.doTransaction((tx) => tx.set(b(`more/${i}`), b('x')));
    release();
    const error = await t.throwsAsync(long, { instanceOf: FdbError });
    t.is(error?.code, FdbErrorCode.not_committed);
    t.is((await db.doTransaction((tx) => tx.get(b('k'))))?.toString(), 'newer');
  } finally {
    await db.close();
  }
});

test('closing waits for accepted commits, resolves armed watches false, and rejects later transactions', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  const watch = await db.doTransaction((tx) => tx.watch(b('w')));
  const pending = db.doTransaction((tx) => tx.set(b('k'), b('v')));
  // let its commit reach the pipeline (a commit that starts after close() is refused)
  await new Promise((resolve) => setImmediate(resolve));
  await db.close();
  await pending;
  t.false(await watch.promise);
  const error = await t.throwsAsync(db.doTransaction((tx) => tx.get(b('k'))), { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.client_invalid_operation);
  const reopened = await openDatabase({ path: dir });
  t.is((await reopened.doTransaction((tx) => tx.get(b('k'))))?.toString(), 'v');
  await reopened.close();
});

test('a transaction still running when the database closes gets a typed error on its next read', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  await db.doTransaction((tx) => tx.set(b('k'), b('v')));
  const { promise: gate, resolve: release } = deferred();
  const running = db.doTransaction(async (tx) => {
    t.is((await tx.get(b('k')))?.toString(), 'v');
    await gate;
    return tx.get(b('k'));
  });
  await new Promise((resolve) => setImmediate(resolve));
  await db.close();
  release();
  const error = await t.throwsAsync(running, { instanceOf: FdbError });
  t.is(error?.code, FdbErrorCode.client_invalid_operation);
  t.regex(error?.message ?? '', /closed/);
});

test('hundreds of transactions can hold distinct read versions at once (more than lmdb\'s default 126 readers)', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  const { promise: gate, resolve: release } = deferred();
  const holders: Array<Promise<string | undefined>> = [];
  for (let i = 0; i < 300; i++) {
    const { promise: reading, resolve: started } = deferred();
    holders.push(
      db.doTransaction(async (tx) => {
        const seen = (await tx.get(b('n')))?.toString();
        started();
        await gate;
        return seen;
      }),
    );
    await reading;
    await db.doTransaction((tx) => tx.set(b('n'), b(String(i)))); // a new version for the next reader
  }
  release();
  const seen = await Promise.all(holders);
  t.is(seen[0], undefined);
  t.is(seen[299], '298');
  await db.close();
});
