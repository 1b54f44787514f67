// The README's schedules example: a nightly cron schedule in a time zone and
// a one-second interval, each tick adding one job named after the schedule
// and the tick, kept in the store. `pnpm exec tsx examples/schedules.ts [--path DIR]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';

const at = process.argv.indexOf('--path');
const path = at >= 0 ? (process.argv[at + 1] as string) : mkdtempSync(join(tmpdir(), 'jobtree-schedules-'));

const app = await startJobs({ path, logLevel: 'silent' });
await app.setTypeTimeout('report', 30);
// 02:00 in Berlin every night; after downtime, the latest missed night still runs.
await app.schedule('nightly', '0 2 * * *', { type: 'report', timezone: 'Europe/Berlin', backfill: 'last', data: { kind: 'nightly' } });
// Every second (a cron expression with a seconds field would do too: '* * * * * *').
await app.schedule('heartbeat', { everyMs: 1_000 }, { type: 'report', data: { kind: 'heartbeat' } });

// Run the jobs as they come: each tick's job once, however many processes run the app.
const ran: string[] = [];
while (ran.length < 2) {
  const job = await app.accept('report', { timeout: 5_000 });
  if (job === undefined) break;
  ran.push(job.id);
  await app.finish(job);
}
console.log('ran:', ran.join(', ')); // heartbeat@2026-…:01.000Z, heartbeat@2026-…:02.000Z
for (const schedule of await app.schedules()) {
  const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
  console.log(`${schedule.name}: last ${time(schedule.lastTick)}, next ${time(schedule.nextTick)}`);
}
await app.unschedule('heartbeat');
await app.close();

if (at < 0) rmSync(path, { recursive: true, force: true });
