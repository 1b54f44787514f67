// Temporary probe: CPU per add-like op, one tx each vs 64 per tx.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@jobtree/core';
import type { Transaction } from '@jobtree/core';
const dir = await mkdtemp(join(tmpdir(), 'jobtree-probe-'));
const db = await openDatabase({ path: dir });
const tt = Buffer.from('timeout'); const wp = Buffer.from('wp'); const wa = Buffer.from('wa');
await db.doTransaction((tx) => tx.set(tt, Buffer.alloc(8)));
const val = Buffer.alloc(60, 1);
async function op(tx: Transaction, id: number) {
  const k = Buffer.from(`data-${id}`);
  const [a, b] = await Promise.all([tx.get(tt), tx.get(k)]);
  if (a === undefined || b !== undefined) throw new Error('x');
  tx.set(k, val); tx.set(Buffer.from(`pend-${id}`), Buffer.alloc(0)); tx.atomicAdd(wp, 1); tx.setVersionstampedValue(wa, Buffer.alloc(12), 0);
}
let n = 0;
for (const mode of ['single', 'batched', 'single', 'batched']) {
  const ops = 20000; const conc = 64;
  const c0 = process.cpuUsage(); const t0 = performance.now();
  if (mode === 'single') {
    await Promise.all(Array.from({ length: conc }, async () => { for (let i = 0; i < ops / conc; i++) { const id = n++; await db.doTransaction((tx) => op(tx, id)); } }));
  } else {
    // Same closed loop of 64 callers, but each round of 64 shares one tx.
    for (let r = 0; r < ops / conc; r++) { const ids = Array.from({ length: conc }, () => n++); await db.doTransaction((tx) => Promise.all(ids.map((id) => op(tx, id)))); }
  }
  const el = performance.now() - t0; const c = process.cpuUsage(c0);
  console.log(`${mode}: ${(ops / el * 1000).toFixed(0)} ops/s, cpu ${((c.user + c.system) / ops).toFixed(1)} µs/op`);
}
await db.close(); await rm(dir, { recursive: true, force: true });
