// Storage benchmark: the embedded engine against raw lmdb, measured in the
// same run on the same disk with the same durability (a write counts once
// lmdb reports it flushed). 64 operations are in flight in the throughput
// measurements. Then the
// commit cycle counted (8 and 64 writers): transactions per lmdb write, how
// many commits arrive while a write is in flight (what a second write slot
// could carry), and how a cycle splits between lmdb's writer and the gap
// from one write's flush to the next write's start. And one commit at a
// time (a lone worker's case): time to durable and CPU per commit, next to
// an lmdb put awaited until flushed.
//
//   pnpm bench:storage                 ~1.5 s per measurement
//   pnpm bench:storage --seconds 3     longer windows, steadier numbers
//   pnpm bench:storage --quick         a smoke run of a few seconds in all

import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { badOption, benchOptions } from './bench-options.js';
import type { Database, Transaction } from '@jobtree/core';
import { openDatabase } from '@jobtree/core';
import { open } from 'lmdb';
import type { RootDatabase } from 'lmdb';
import { CommitPipeline } from '../packages/core/src/storage/embedded/commit-pipeline.js';
import { LmdbStore } from '../packages/core/src/storage/embedded/lmdb-store.js';
import { RATIO_HEADER, formatTable, infoRow, ratioRow } from './table.js';
import type { Cell } from './table.js';
import { bestOfInterleaved, measureSyncThroughput, measureThroughput } from './throughput.js';

const USAGE = `usage: pnpm bench:storage [--seconds S] [--quick]
  --seconds S   counted seconds per measurement (default 1.5; a quarter of it again for warm-up)
  --quick       0.3 s per measurement and a smaller data set: a smoke run`;

function parseOptions(): { seconds: number; quick: boolean } {
  const values = benchOptions(USAGE, {
    seconds: { type: 'string' },
    quick: { type: 'boolean', default: false },
  });
  const quick = values.quick ?? false;
  const seconds = values.seconds === undefined ? (quick ? 0.3 : 1.5) : Number(values.seconds);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 60) badOption(USAGE, `--seconds must be a number of seconds in (0, 60], got ${values.seconds}`);
  return { seconds, quick };
}

const CONCURRENCY = 64;
const ROUNDS = 3;
const VALUE = Buffer.alloc(100, 0x61);
const READS_PER_TRANSACTION = 10;
const WIDE_KEYS = 1000;
/** Keys of the range-page measurement, and the page size (a local queue's accept reads a page of its size). */
const RANGE_KEYS = 2_000;
const RANGE_PAGE = 500;

/** Fixed-width keys so both stores see the same key sizes and order. */
function keyOf(space: string, n: number): Buffer {
  return Buffer.from(`${space}/${n.toString().padStart(10, '0')}`);
}

function counterValue(n: bigint): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(n);
  return bytes;
}

function counterOf(bytes: Uint8Array | undefined): bigint {
  return bytes === undefined ? 0n : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readBigUInt64LE(0);
}

/** A write promise of lmdb opened with `separateFlushed`: durable once `flushed` settles. */
function durable(write: Promise<unknown>): Promise<unknown> {
  return (write as Promise<unknown> & { flushed?: Promise<unknown> }).flushed ?? write;
}

/** Uniform over `keys` counters: the contention a real workload of that width sees. */
function randomKey(keys: number): number {
  return Math.floor(Math.random() * keys);
}

/** A random but repeatable read order, so both stores read the same keys. */
function readOrder(keys: number, length: number): Uint32Array {
  const order = new Uint32Array(length);
  let state = 0x9e3779b9;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    order[i] = (state >>> 0) % keys;
  }
  return order;
}

interface CommitCycles {
  /** Transactions per lmdb write. */
  perWrite: number;
  /** Share of commits that arrived while an lmdb write was in flight (what a second write slot could carry). */
  arrivedInFlight: number;
  /** Mean time from one write's flush to the next write's start, ms (the main thread's share of a cycle). */
  gapMs: number;
  /** Mean time from a write's start to its flush, ms (lmdb's writer: commit and sync). */
  writeMs: number;
  /** Share of lmdb writes made in place, on the main thread (lone commits; not in the two times above). */
  inPlace: number;
}

/**
 * Counts what the commit pipeline does under `concurrency` closed-loop
 * single-key writers, by wrapping the engine's lmdb writes and commits: the
 * evidence for how many lmdb writes the engine keeps in flight.
 */
async function countCommitCycles(db: Database, concurrency: number, seconds: number): Promise<CommitCycles> {
  const write = LmdbStore.prototype.write;
  const writeNow = LmdbStore.prototype.writeNow;
  const commit = CommitPipeline.prototype.commit;
  let writes = 0;
  let writesNow = 0;
  let commits = 0;
  let inFlight = 0;
  let arrivedInFlight = 0;
  let lastFlush = 0;
  let gaps = 0;
  let gapSum = 0;
  let writeSum = 0;
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    const started = performance.now();
    if (lastFlush > 0) {
      gaps++;
      gapSum += started - lastFlush;
    }
    writes++;
    const pending = write.call(this, version, fill);
    // The write opens when its first transaction joins; it is "in flight" once lmdb has it.
    setImmediate(() => inFlight++);
    pending.flushed.then(() => {
      inFlight--;
      lastFlush = performance.now();
      writeSum += lastFlush - started;
    });
    return pending;
  };
  LmdbStore.prototype.writeNow = function (this: LmdbStore, version, fill) {
    writesNow++;
    writeNow.call(this, version, fill);
  };
  CommitPipeline.prototype.commit = function (this: CommitPipeline, request) {
    commits++;
    if (inFlight > 0) arrivedInFlight++;
    return commit.call(this, request);
  };
  try {
    await measureThroughput({ concurrency, seconds, warmupSeconds: 0 }, (_, n) =>
      db.doTransaction((tx) => tx.set(keyOf('cycle', n), VALUE)),
    );
  } finally {
    LmdbStore.prototype.write = write;
    LmdbStore.prototype.writeNow = writeNow;
    CommitPipeline.prototype.commit = commit;
  }
  return {
    perWrite: writes + writesNow === 0 ? 0 : commits / (writes + writesNow),
    arrivedInFlight: commits === 0 ? 0 : arrivedInFlight / commits,
    gapMs: gaps === 0 ? 0 : gapSum / gaps,
    writeMs: writes === 0 ? 0 : writeSum / writes,
    inPlace: writes + writesNow === 0 ? 0 : writesNow / (writes + writesNow),
  };
}

interface OneAtATime {
  /** Median time from starting a commit to its durable acknowledgement, ms. */
  p50Ms: number;
  /** CPU of the whole process (every thread, kernel time included) per commit, µs. */
  cpuMicros: number;
}

/**
 * One commit at a time, each started when the last is durable: what a lone
 * worker (an accept, then a finish) or an add on an idle store pays, where no
 * group commit shares the flush. The engine writes such lone commits in
 * place, in a synchronous lmdb transaction (see commit-pipeline.ts).
 */
async function oneAtATime(seconds: number, operation: (n: number) => Promise<unknown>): Promise<OneAtATime> {
  const warmupEnd = performance.now() + (seconds * 1000) / 4;
  let n = 0;
  while (performance.now() < warmupEnd) await operation(n++);
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  for (let now = performance.now(); now < end; ) {
    await operation(n++);
    const done = performance.now();
    latencies.push(done - now);
    now = done;
  }
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  return {
    p50Ms: latencies[latencies.length >> 1] ?? 0,
    cpuMicros: latencies.length === 0 ? 0 : (used.user + used.system) / latencies.length,
  };
}

/** The best (lowest) of interleaved rounds of each sequential measurement. */
async function bestOneAtATime<K extends string>(
  rounds: number,
  measurements: Record<K, () => Promise<OneAtATime>>,
): Promise<Record<K, OneAtATime>> {
  const best = {} as Record<K, OneAtATime>;
  for (let round = 0; round < rounds; round++) {
    for (const name of Object.keys(measurements) as K[]) {
      const result = await measurements[name]();
      const current = best[name];
      best[name] = {
        p50Ms: Math.min(current?.p50Ms ?? Number.POSITIVE_INFINITY, result.p50Ms),
        cpuMicros: Math.min(current?.cpuMicros ?? Number.POSITIVE_INFINITY, result.cpuMicros),
      };
    }
  }
  return best;
}

interface ReadModifyWrite {
  commitsPerSecond: number;
  retriesPerCommit: number;
  lostUpdates: bigint;
}

/** 64 loops incrementing counters with get + set in a transaction; checks no increment was lost. */
async function readModifyWrite(db: Database, space: string, keys: number, seconds: number): Promise<ReadModifyWrite> {
  let runs = 0;
  let commits = 0;
  const result = await measureThroughput({ concurrency: CONCURRENCY, seconds }, async () => {
    // Picked outside the body: a retry must touch the same key (bodies are idempotent).
    const key = keyOf(space, randomKey(keys));
    await db.doTransaction(async (tx: Transaction) => {
      runs++;
      tx.set(key, counterValue(counterOf(await tx.get(key)) + 1n));
    });
    commits++;
  });
  const stored = await db.doTransaction(async (tx) => {
    let sum = 0n;
    for (const { value } of await tx.getRange(keyOf(space, 0), keyOf(space, keys))) sum += counterOf(value);
    return sum;
  });
  return {
    commitsPerSecond: result.perSecond,
    retriesPerCommit: commits === 0 ? 0 : (runs - commits) / commits,
    lostUpdates: BigInt(commits) - stored,
  };
}

/** The same increments as raw lmdb transactions (lmdb serialises them: no retries). */
async function rawReadModifyWrite(raw: RootDatabase<Buffer, Buffer>, space: string, keys: number, seconds: number) {
  return measureThroughput({ concurrency: CONCURRENCY, seconds }, () => {
    const key = keyOf(space, randomKey(keys));
    return durable(raw.transaction(() => raw.put(key, counterValue(counterOf(raw.get(key)) + 1n))));
  });
}

async function main(): Promise<void> {
  const { seconds, quick } = parseOptions();
  const readKeys = quick ? 2_000 : 10_000;
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-bench-storage-'));
  // Same encodings and durability as the embedded engine's lmdb environment.
  const raw = open<Buffer, Buffer>({
    path: join(dir, 'raw-lmdb'),
    keyEncoding: 'binary',
    encoding: 'binary',
    separateFlushed: true,
  } as Parameters<typeof open>[0] & { separateFlushed: boolean }) as RootDatabase<Buffer, Buffer>;
  let db: Database | undefined;
  const rows: Cell[][] = [];
  let failed = false;
  try {
    db = await openDatabase({ path: join(dir, 'jobtree') });
    const engine = db;
    // The ratio measurements alternate baseline and jobtree in short rounds and keep each one's best.
    const window = { concurrency: CONCURRENCY, seconds: seconds / ROUNDS };
    console.log(
      `storage benchmark: ${CONCURRENCY} in flight, ${seconds} s per measurement ` +
        `(best of ${ROUNDS} interleaved rounds for the ratios, each with a warm-up), ` +
        `node ${process.version}, ${availableParallelism()} CPUs, data in ${dir}`,
    );

    // 1. Single-key write transactions vs raw batched async puts.
    const { rawPuts, writes } = await bestOfInterleaved(ROUNDS, {
      rawPuts: () => measureThroughput(window, (_, n) => durable(raw.put(keyOf('w', n), VALUE))),
      writes: () => measureThroughput(window, (_, n) => engine.doTransaction((tx) => tx.set(keyOf('w', n), VALUE))),
    });
    rows.push(ratioRow({ metric: 'write transactions/s (1 key) vs lmdb puts/s', value: writes.perSecond, baseline: rawPuts.perSecond, target: 0.5 }));

    // 2. Point reads inside transactions vs raw gets, over the same keys in the same order.
    await raw.transaction(() => {
      for (let i = 0; i < readKeys; i++) raw.put(keyOf('r', i), VALUE);
    });
    for (let start = 0; start < readKeys; start += 1000) {
      await engine.doTransaction((tx) => {
        for (let i = start; i < Math.min(start + 1000, readKeys); i++) tx.set(keyOf('r', i), VALUE);
      });
    }
    const order = readOrder(readKeys, 1 << 16);
    const readKey = Array.from(order, (i) => keyOf('r', i));
    const mask = order.length - 1;
    let rawMisses = 0;
    let misses = 0;
    const { rawGets, reads, singleReads } = await bestOfInterleaved(ROUNDS, {
      rawGets: () =>
        measureSyncThroughput(window.seconds, (n) => {
          if (raw.get(readKey[n & mask]!) === undefined) rawMisses++;
        }),
      reads: () =>
        measureThroughput(window, (_, n) =>
          engine.doTransaction(async (tx) => {
            for (let i = 0; i < READS_PER_TRANSACTION; i++) {
              if ((await tx.get(readKey[(n * READS_PER_TRANSACTION + i) & mask]!)) === undefined) misses++;
            }
          }),
        ),
      singleReads: () => measureThroughput(window, (_, n) => engine.doTransaction((tx) => tx.get(readKey[n & mask]!))),
    });
    if (misses + rawMisses > 0) {
      failed = true;
      console.error(`BUG: ${misses} jobtree and ${rawMisses} lmdb reads missed keys that were written`);
    }
    rows.push(
      ratioRow({
        metric: `point reads/s in transactions (${READS_PER_TRANSACTION}/tx) vs lmdb gets/s`,
        value: reads.perSecond * READS_PER_TRANSACTION,
        baseline: rawGets.perSecond,
        target: 0.5,
      }),
    );
    rows.push(infoRow('read-only transactions/s (1 get each) vs lmdb gets/s', singleReads.perSecond, rawGets.perSecond));

    // 2b. Range pages (a pending queue's front: short keys, empty values), read in
    // transactions vs lmdb's own getRange with the same encodings, pair by pair.
    const emptyValue = Buffer.alloc(0);
    await raw.transaction(() => {
      for (let i = 0; i < RANGE_KEYS; i++) raw.put(keyOf('p', i), emptyValue);
    });
    await engine.doTransaction((tx) => {
      for (let i = 0; i < RANGE_KEYS; i++) tx.set(keyOf('p', i), emptyValue);
    });
    const pageStart = keyOf('p', 0);
    const pageEnd = Buffer.from('p;');
    let shortPages = 0;
    const { rawPages, pages } = await bestOfInterleaved(ROUNDS, {
      rawPages: () =>
        measureSyncThroughput(
          window.seconds,
          () => {
            const page = [];
            for (const entry of raw.getRange({ start: pageStart, end: pageEnd, limit: RANGE_PAGE })) page.push(entry);
            if (page.length !== RANGE_PAGE) shortPages++;
          },
          10,
        ),
      pages: () =>
        measureThroughput(window, () =>
          engine.doTransaction(async (tx) => {
            const page = await tx.snapshot().getRange(pageStart, pageEnd, { limit: RANGE_PAGE });
            if (page.length !== RANGE_PAGE) shortPages++;
          }),
        ),
    });
    if (shortPages > 0) {
      failed = true;
      console.error(`BUG: ${shortPages} range pages came back short`);
    }
    rows.push(
      ratioRow({
        metric: `range pairs/s in transactions (pages of ${RANGE_PAGE}, empty values) vs lmdb getRange pairs/s`,
        value: pages.perSecond * RANGE_PAGE,
        baseline: rawPages.perSecond * RANGE_PAGE,
        target: 1,
      }),
    );

    // 3. Read-modify-write on one hot key and on 1,000 keys.
    for (const [label, keys] of [
      ['1 hot key', 1],
      [`${WIDE_KEYS.toLocaleString('en-US')} keys`, WIDE_KEYS],
    ] as const) {
      const space = `c${keys}`;
      const rawRmw = await rawReadModifyWrite(raw, space, keys, seconds);
      // One round: retries per commit is a property of the whole run, not a best case.
      const rmw = await readModifyWrite(engine, space, keys, seconds);
      rows.push(infoRow(`read-modify-write commits/s, ${label} vs lmdb transaction()`, rmw.commitsPerSecond, rawRmw.perSecond));
      rows.push(infoRow(`read-modify-write retries per commit, ${label}`, rmw.retriesPerCommit));
      if (rmw.lostUpdates !== 0n) {
        failed = true;
        console.error(`BUG: read-modify-write on ${label} lost ${rmw.lostUpdates} increments`);
      }
    }

    // 4. One commit at a time: the engine's own cost per commit next to lmdb's floor (a put awaited until flushed).
    const sequential = await bestOneAtATime(ROUNDS, {
      rawPut: () => oneAtATime(window.seconds, (n) => durable(raw.put(keyOf('s', n % WIDE_KEYS), VALUE))),
      write: () => oneAtATime(window.seconds, (n) => engine.doTransaction((tx) => tx.set(keyOf('s', n % WIDE_KEYS), VALUE))),
      readWrite: () =>
        oneAtATime(window.seconds, (n) =>
          engine.doTransaction(async (tx) => {
            const key = keyOf('s', n % WIDE_KEYS);
            await tx.get(key);
            tx.set(key, VALUE);
          }),
        ),
    });
    rows.push(infoRow('one at a time: ms to durable (p50), write tx vs lmdb put', sequential.write.p50Ms, sequential.rawPut.p50Ms));
    rows.push(infoRow('one at a time: ms to durable (p50), get+set tx vs lmdb put', sequential.readWrite.p50Ms, sequential.rawPut.p50Ms));
    rows.push(infoRow('one at a time: CPU µs per commit (all threads), write tx vs lmdb put', sequential.write.cpuMicros, sequential.rawPut.cpuMicros));
    rows.push(infoRow('one at a time: CPU µs per commit (all threads), get+set tx vs lmdb put', sequential.readWrite.cpuMicros, sequential.rawPut.cpuMicros));

    // 5. The commit cycle, counted: why one lmdb write at a time (see commit-pipeline.ts).
    for (const inFlight of [8, CONCURRENCY]) {
      const cycles = await countCommitCycles(engine, inFlight, seconds);
      rows.push(infoRow(`transactions per lmdb write, ${inFlight} in flight`, cycles.perWrite));
      rows.push(infoRow(`% of commits arriving while a write is in flight, ${inFlight} in flight`, cycles.arrivedInFlight * 100));
      rows.push(infoRow(`ms per cycle: lmdb write (commit + sync), ${inFlight} in flight`, cycles.writeMs));
      rows.push(infoRow(`ms per cycle: flush -> next write starts, ${inFlight} in flight`, cycles.gapMs));
      rows.push(infoRow(`% of lmdb writes made in place (lone commits), ${inFlight} in flight`, cycles.inPlace * 100));
    }

    console.log();
    console.log(formatTable(RATIO_HEADER, rows));
    console.log();
    console.log('baselines: raw lmdb in the same run, same encodings, a write counted once flushed (separateFlushed)');
  } finally {
    await db?.close();
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

await main();
