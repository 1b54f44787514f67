// The README's quick start: a store, a handler for a job type, one job
// followed through a subscription, and its result read once it finished. `pnpm exec tsx examples/quick-start.ts [--path DIR]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';
import resize from './handlers/resize.js';

const at = process.argv.indexOf('--path');
const path = at >= 0 ? (process.argv[at + 1] as string) : mkdtempSync(join(tmpdir(), 'jobtree-quick-start-'));

const app = await startJobs({ path }); // the embedded store: no server
await app.setTypeTimeout('resize', 30); // a handler reports progress at least every 30 s
await app.process('resize', resize, { maxJobs: 4 }); // up to 4 at once, in worker threads
await app.add('resize', 'cat.jpg', { width: 128 });
const sub = await app.subscribe('resize', 'cat.jpg');
const done = await app.wait(sub, 'finished', 30_000);
// The job's data stays its input; what the handler returned is its result.
console.log('cat.jpg:', done === 'timeout' ? 'timeout' : (await app.getJob('resize', 'cat.jpg'))?.result);
await app.close();

if (at < 0) rmSync(path, { recursive: true, force: true });
