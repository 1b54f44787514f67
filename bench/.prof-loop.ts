import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, openJobs } from '@jobtree/core';
const dir = await mkdtemp(join(tmpdir(), 'jprof-'));
const db = await openDatabase({ path: dir });
const jobs = await openJobs({ database: db });
await jobs.setTypeTimeout('b', 30);
const N = 30000;
const ids = Array.from({ length: N }, (_, i) => `d${i}`);
const t0 = performance.now();
for (let s = 0; s < N; s += 1000) await jobs.addMany('b', ids.slice(s, s + 1000).map((id) => ({ id, data: { id } })));
const t1 = performance.now();
let accept = 0, finish = 0;
for (;;) {
  let t = performance.now(); const b = await jobs.acceptMany('b', 500); accept += performance.now() - t;
  if (!b.length) break;
  t = performance.now(); await jobs.finishMany(b.map((job) => ({ job }))); finish += performance.now() - t;
}
console.log('add', (t1 - t0).toFixed(0), 'accept', accept.toFixed(0), 'finish', finish.toFixed(0));
await jobs.close(); await db.close(); await rm(dir, { recursive: true, force: true });
