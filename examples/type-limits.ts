// Limits per job type, kept in the store: at most 2 thumbnails running at
// once and at most 5 started per half second, whatever number of workers
// (or processes) take them; then the limits lifted.
//
//   pnpm exec tsx examples/type-limits.ts

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJobs } from 'jobtree';

const path = mkdtempSync(join(tmpdir(), 'jobtree-limits-demo-'));
const jobs = await openJobs({ path });
await jobs.setTypeTimeout('thumbnail', 30);
await jobs.setTypeLimits('thumbnail', { concurrency: 2, rate: { max: 5, perMs: 500 } });
console.log('limits:', JSON.stringify(await jobs.getTypeLimits('thumbnail')));
await jobs.addMany('thumbnail', Array.from({ length: 12 }, (_, i) => ({ id: `img-${i}`, data: { size: 128 } })));

let running = 0;
let most = 0;
const startsPerWindow = new Map<number, number>();
const worker = async (): Promise<void> => {
  for (let job = await jobs.accept('thumbnail', { timeout: 2_000 }); job !== undefined; job = await jobs.accept('thumbnail', { timeout: 2_000 })) {
    const window = Math.floor(Date.now() / 500);
    startsPerWindow.set(window, (startsPerWindow.get(window) ?? 0) + 1);
    running += 1;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the work
    running -= 1;
    await jobs.finish(job);
  }
};
await Promise.all([worker(), worker(), worker(), worker(), worker(), worker()]);
console.log(`12 jobs by 6 workers: at most ${most} running at once; pending left: ${await jobs.pendingCount('thumbnail')}`);
console.log(`starts per half second: ${[...startsPerWindow.values()].join(', ')}`);

await jobs.setTypeLimits('thumbnail', null);
console.log('limits lifted:', (await jobs.getTypeLimits('thumbnail')) === undefined);
await jobs.close();
rmSync(path, { recursive: true, force: true });
console.log('closed');
