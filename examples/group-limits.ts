// The README's groups example: jobs of one type in groups (a tenant each),
// at most one job of a group running at once, and fair turns across the
// groups: a tenant's backlog of 200 reports keeps none of the other
// tenants' single report waiting behind it. `pnpm exec tsx examples/group-limits.ts [--path DIR]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';

const at = process.argv.indexOf('--path');
const path = at >= 0 ? (process.argv[at + 1] as string) : mkdtempSync(join(tmpdir(), 'jobtree-groups-'));

const app = await startJobs({ path, logLevel: 'silent' });
await app.setTypeTimeout('report', 30);
// Kept in the store: every process and every restart takes under them.
await app.setLimits('report', { group: { concurrency: 1 } });
console.log('limits:', JSON.stringify(await app.getLimits('report')));
// One tenant queues 200 reports, then nine tenants one each.
await app.addMany('report', Array.from({ length: 200 }, (_, i) => ({ id: `big-${i}`, group: 'tenant-big' })));
for (let i = 1; i <= 9; i++) await app.add('report', `small-${i}`, { tenant: i }, { group: `tenant-${i}` });

const started: string[] = [];
let running = 0;
let most = 0;
const worker = async (): Promise<void> => {
  for (let job = await app.accept('report', { timeout: 1_000 }); job !== undefined; job = await app.accept('report', { timeout: 1_000 })) {
    started.push(job.group ?? '');
    if (job.group === 'tenant-big') running += 1;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 1)); // the work
    if (job.group === 'tenant-big') running -= 1;
    await app.finish(job);
  }
};
await Promise.all([worker(), worker(), worker(), worker()]);
const lastSmall = Math.max(...started.map((group, index) => (group === 'tenant-big' ? 0 : index + 1)));
console.log(`${started.length} reports by 4 workers; the 9 single-report tenants all started within the first ${lastSmall} starts`);
console.log(`tenant-big ran at most ${most} report at once`);
await app.close();

if (at < 0) rmSync(path, { recursive: true, force: true });
