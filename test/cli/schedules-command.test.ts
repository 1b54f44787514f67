// `jobtree schedules`, `GET /api/schedules` and the dashboard's feed of
// them: each schedule with its spec, type, backfill policy and its last and
// next ticks, against a running app and against a closed store.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openJobs } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { request } from '../admin/fixtures/admin-app.js';
import { json, jobtreeHere } from './fixtures/run-cli.js';

async function tempDir(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-cli-schedules-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Listed {
  schedules: { name: string; type: string; lastTick: number | null; nextTick: number | null; spec: unknown; backfill: unknown }[];
}

test.serial('against a running app: schedules lists them with their ticks, as GET /api/schedules does', async (t) => {
  const dir = await tempDir(t);
  const app = await startJobs({ path: dir, threads: 1, typeMonitorHoldoffMs: 0, logLevel: 'silent', admin: { port: 0 } });
  t.teardown(() => app.close());
  await app.setTypeTimeout('report', 30);
  await app.schedule('nightly', '0 2 * * *', { type: 'report', timezone: 'Europe/Berlin', backfill: 'last' });
  await app.schedule('often', { everyMs: 1_000 }, { type: 'report' });
  const now = Date.now();
  const cli = json<Listed>(await jobtreeHere('schedules', '--json', '--path', dir));
  t.deepEqual(cli.schedules.map((schedule) => schedule.name), ['nightly', 'often']);
  const nightly = cli.schedules[0]!;
  t.like(nightly, { type: 'report', spec: { cron: '0 2 * * *', timezone: 'Europe/Berlin' }, backfill: 'last', lastTick: null });
  t.true((nightly.nextTick ?? 0) > now && (nightly.nextTick ?? 0) <= now + 86_400_000);
  const text = (await jobtreeHere('schedules', '--path', dir)).stdout;
  t.regex(text, /^name\s+when\s+type\s+backfill\s+last tick\s+next tick$/m);
  t.regex(text, /^nightly\s+0 2 \* \* \* \(Europe\/Berlin\)\s+report\s+last\s+-\s+\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/m);
  t.regex(text, /^often\s+every 1000 ms\s+report\s+none\s/m);
  const api = (await request(`${app.admin!.url}/api/schedules`)).body as Listed;
  t.deepEqual(api.schedules.map((schedule) => schedule.name), ['nightly', 'often']);
});

test.serial('against a closed store: schedules reads them from the store', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.setSchedule({ name: 'weekly', spec: { cron: '0 9 * * 1' }, type: 'report', data: null, priority: 0, backfill: { withinMs: 3_600_000 }, nextTick: null });
  await jobs.close();
  const cli = json<Listed>(await jobtreeHere('schedules', '--json', '--path', dir));
  t.like(cli.schedules[0], { name: 'weekly', backfill: { withinMs: 3_600_000 } });
  t.true((cli.schedules[0]?.nextTick ?? 0) > Date.now());
  t.regex((await jobtreeHere('schedules', '--path', dir)).stdout, /^weekly\s+0 9 \* \* 1\s+report\s+within 3600000 ms\s+-\s+\S+Z$/m);
});

test.serial('no schedules: a line that says so', async (t) => {
  const dir = await tempDir(t);
  const jobs = await openJobs({ path: dir });
  await jobs.close();
  t.regex((await jobtreeHere('schedules', '--path', dir)).stdout, /^no schedules$/m);
});
