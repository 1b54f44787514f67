// Temporary probe (jobs engineer): per-phase latency, attempts, batch sizes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, openJobs } from '@jobtree/core';
import { CommitPipeline } from '../packages/core/src/storage/embedded/commit-pipeline.js';
import { LmdbStore } from '../packages/core/src/storage/embedded/lmdb-store.js';

let commits = 0;
let conflicts = 0;
let batches = 0;
const seenDurable = new WeakSet<Promise<void>>(); let lastDurable = 0; const sinceDurable: number[] = [];
let keysWritten = 0; let lastStart = 0; const gaps: number[] = []; const commitT: number[] = []; const flushT: number[] = [];
const origCommit = CommitPipeline.prototype.commit;
CommitPipeline.prototype.commit = function (this: CommitPipeline, req) {
  try {
    const t = origCommit.call(this, req);
    commits++;
    if (!seenDurable.has(t.durable)) { seenDurable.add(t.durable); t.durable.then(() => { lastDurable = performance.now(); }, () => {}); }
    return t;
  } catch (e) {
    conflicts++;
    throw e;
  }
};
const origWrite = LmdbStore.prototype.write;
LmdbStore.prototype.write = function (this: LmdbStore, ...a: Parameters<LmdbStore['write']>) {
  batches++;
  const t = performance.now();
  const changes = [...a[0]];
  keysWritten += changes.length;
  const w = origWrite.call(this, changes, a[1], a[2]);
  if (lastStart) gaps.push(t - lastStart);
  if (lastDurable) sinceDurable.push(t - lastDurable);
  lastStart = t;
  w.committed.then(() => { const c = performance.now(); commitT.push(c - t); w.flushed.then(() => flushT.push(performance.now() - c)); });
  return w;
};

const workers = Number(process.argv[2] ?? 64);
const seconds = Number(process.argv[3] ?? 2);
const dir = await mkdtemp(join(tmpdir(), 'jobtree-probe-'));
const db = await openDatabase({ path: dir });
let bodies = 0;
let txs = 0;
const orig = db.doTransaction.bind(db);
(db as { doTransaction: typeof db.doTransaction }).doTransaction = (body, o) => {
  txs++;
  return orig((tx) => {
    bodies++;
    return body(tx);
  }, o);
};
const jobs = await openJobs({ database: db });
await jobs.setTypeTimeout('bench', 30);
const lat: Record<string, number[]> = { add: [], accept: [], finish: [], cycle: [] };
let none = 0;
let n = 0;
const end = performance.now() + seconds * 1000;
const warm = performance.now() + 300;
let cycles = 0;
let c0 = 0, b0 = 0, t0 = 0, bo0 = 0, cf0 = 0;
let reset = false;
let cpu0 = process.cpuUsage();
const mode = process.argv[4] ?? 'jobs';
const value = Buffer.alloc(64, 7);
await Promise.all(
  Array.from({ length: workers }, async (_, loop) => {
    while (performance.now() < end) {
      if (mode === 'storage') {
        const w = performance.now() > warm;
        if (w && !reset) { reset = true; cpu0 = process.cpuUsage(); c0 = commits; b0 = batches; t0 = txs; bo0 = bodies; cf0 = conflicts; }
        const k = n++;
        await db.doTransaction((tx) => tx.set(Buffer.from(`k${k % 100_000}`), value));
        if (w) cycles++;
        continue;
      }
      const id = mode === 'seq' ? `j${String(n).padStart(9, '0')}` : `w${loop}-${n}`;
      const w = performance.now() > warm;
      if (w && !reset) { reset = true; cpu0 = process.cpuUsage(); c0 = commits; b0 = batches; t0 = txs; bo0 = bodies; cf0 = conflicts; }
      const s = performance.now();
      n++;
      await jobs.add('bench', id, { n });
      const a = performance.now();
      const job = await jobs.accept('bench', { timeout: 1000 });
      const b = performance.now();
      if (job) await jobs.finish(job, { done: true });
      else none++;
      const f = performance.now();
      if (w) {
        lat.add?.push(a - s); lat.accept?.push(b - a); if (job) lat.finish?.push(f - b); lat.cycle?.push(f - s);
        cycles++;
      }
    }
  }),
);
const el = seconds - 0.3;
const cpu = process.cpuUsage(cpu0);
console.log(`  cpu user=${(cpu.user/1e3/el/10).toFixed(0)}% sys=${(cpu.system/1e3/el/10).toFixed(0)}% of one core, ${((cpu.user + cpu.system) / Math.max(1, cycles)).toFixed(0)} µs CPU per cycle`);
const q = (xs: number[], p: number) => { const s = [...xs].sort((x, y) => x - y); return s[Math.floor(s.length * p)]?.toFixed(2); };
console.log(`workers=${workers} cycles/s=${(cycles / el).toFixed(0)} none=${none}`);
for (const [k, v] of Object.entries(lat)) console.log(`  ${k.padEnd(7)} n=${v.length} p50=${q(v, 0.5)} p90=${q(v, 0.9)} p99=${q(v, 0.99)} ms`);
const C = commits - c0, B = batches - b0;
console.log(`  txs=${txs - t0} bodies=${bodies - bo0} commits=${C} conflicts=${conflicts - cf0} lmdbBatches=${B} commits/batch=${(C / B).toFixed(1)} batches/s=${(B / el).toFixed(0)}`);
console.log(`  keys/batch=${(keysWritten/batches).toFixed(0)} lmdb commit p50=${q(commitT,0.5)} flush p50=${q(flushT,0.5)} p90=${q(flushT,0.9)} gap between write starts p50=${q(gaps,0.5)} p90=${q(gaps,0.9)} write start after last publish p50=${q(sinceDurable,0.5)} p90=${q(sinceDurable,0.9)}`);
await jobs.close();
await db.close();
await rm(dir, { recursive: true, force: true });
