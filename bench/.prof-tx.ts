import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, openJobs } from '@jobtree/core';
const dir = await mkdtemp(join(tmpdir(), 'jprof-'));
const db = await openDatabase({ path: dir });
const jobs = await openJobs({ database: db });
await jobs.setTypeTimeout('b', 30);
const N = 5000;
const ids = Array.from({ length: N }, (_, i) => `d${i}`);
let t = performance.now();
for (let s = 0; s < N; s += 1000) { await jobs.addMany('b', ids.slice(s, s + 1000).map((id) => ({ id, data: { id } }))); console.log('addMany 1000', (performance.now() - t).toFixed(1)); t = performance.now(); }
for (let i = 0; i < 5; i++) {
  t = performance.now(); const b = await jobs.acceptMany('b', 500); const ta = performance.now() - t;
  t = performance.now(); await jobs.finishMany(b.map((job) => ({ job }))); const tf = performance.now() - t;
  console.log('accept', b.length, ta.toFixed(1), 'finish', tf.toFixed(1));
}
t = performance.now(); for (let i = 0; i < 100; i++) await db.doTransaction((tx) => tx.set(Buffer.from('k' + i), Buffer.from('v'))); console.log('100 single commits', (performance.now() - t).toFixed(1));
await jobs.close(); await db.close(); await rm(dir, { recursive: true, force: true });
