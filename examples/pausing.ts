// The README's pausing example: a paused type starts no job in any process
// of the store until it is resumed; adds go on, and a resume wakes the
// waiting takers at once. `pnpm exec tsx examples/pausing.ts [--path DIR]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';

const at = process.argv.indexOf('--path');
const path = at >= 0 ? (process.argv[at + 1] as string) : mkdtempSync(join(tmpdir(), 'jobtree-pausing-'));

const app = await startJobs({ path, logLevel: 'silent' });
await app.setTypeTimeout('email', 30);
await app.pause('email'); // kept in the store: every process, every restart
await app.add('email', 'welcome-1', { to: 'ada@example.com' }); // adds go on
console.log('paused:', await app.isPaused('email'), (await app.getPausedTypes()).map((paused) => paused.type));
console.log('accept while paused:', await app.accept('email', { timeout: 200 })); // undefined: nothing starts
const waiting = app.accept('email', { timeout: 60_000 }); // waits for the type...
await app.resume('email'); // ...and wakes at once
const job = await waiting;
console.log('after resume:', job?.id);
if (job !== undefined) await app.finish(job);
await app.close();

if (at < 0) rmSync(path, { recursive: true, force: true });
