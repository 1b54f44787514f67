import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, openJobs } from '@jobtree/core';
const mode = process.argv[2] ?? 'batch';
const N = Number(process.argv[3] ?? 20000);
const dir = await mkdtemp(join(tmpdir(), 'jprof-'));
const db = await openDatabase({ path: dir });
const jobs = await openJobs({ database: db });
await jobs.setTypeTimeout('b', 30);
const ids = Array.from({ length: N }, (_, i) => `d${i}`);
const cpu = process.cpuUsage(); const t0 = performance.now();
let addCpu = 0;
if (mode === 'batch') {
  const adds = [];
  for (let s = 0; s < N; s += 1000) adds.push(jobs.addMany('b', ids.slice(s, s + 1000).map((id) => ({ id, data: { id } }))));
  await Promise.all(adds);
  addCpu = process.cpuUsage(cpu).user;
  let fin = 0;
  await Promise.all([0, 1].map(async () => {
    for (let b = await jobs.acceptMany('b', 500); b.length; b = await jobs.acceptMany('b', 500)) {
      const o = await jobs.finishMany(b.map((job) => ({ job, data: { ok: true } }))); fin += o.length;
    }
  }));
} else {
  let next = 0;
  await Promise.all(Array.from({ length: 50 }, async () => { while (next < N) { const id = ids[next++]; await jobs.add('b', id, { id }); } }));
  addCpu = process.cpuUsage(cpu).user;
  await Promise.all(Array.from({ length: 50 }, async () => { for (let j = await jobs.accept('b'); j; j = await jobs.accept('b')) await jobs.finish(j, { ok: true }); }));
}
const used = process.cpuUsage(cpu);
console.log(mode, 'wall', ((performance.now() - t0) / 1000).toFixed(2), 'cpu', ((used.user + used.system) / 1e6).toFixed(2), 'addcpu', (addCpu / 1e6).toFixed(2));
await jobs.close(); await db.close(); await rm(dir, { recursive: true, force: true });
