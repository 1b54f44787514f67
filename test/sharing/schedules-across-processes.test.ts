// Schedules on a store shared by two processes: a client's app.schedule is
// stored through the owner and ticked by the owner's ticker (the periodic
// actors run once per store), the client lists it, and the owner and a
// client racing on the same ticks add each tick's job once.

import test from 'ava';
import { tickJobId } from '@jobtree/core';
import { startJobs } from 'jobtree';
import { tickSchedules } from '../../packages/jobtree/src/app/schedule-ticks.js';
import { Peer, tempDataDir } from './fixtures/peers.js';

const TICKS = JSON.stringify(new URL('../../packages/jobtree/src/app/schedule-ticks.ts', import.meta.url).href);

async function eventually(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("a client's schedule is ticked by the owner, once per tick, and listed in both", async (t) => {
  t.timeout(120_000);
  const dir = await tempDataDir(t, 'schedules-client');
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  await app.setTypeTimeout('report', 30);
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  await client.run(`await app.schedule('from-client', { everyMs: 1_000 }, { type: 'report', data: { by: 'client' } })`);
  // The owner's ticker finds it within its poll period (5 s by default).
  await eventually(async () => (await app.getJobs('report')).length >= 2, 30_000, "two ticks of the client's schedule");
  const ids = (await app.getJobs('report')).map((job) => job.id);
  t.true(ids.every((id) => id.startsWith('from-client@')));
  t.is(new Set(ids).size, ids.length);
  t.deepEqual((await app.schedules()).map((schedule) => schedule.name), ['from-client']);
  t.like(await client.run(`return (await app.schedules())[0]`), { name: 'from-client', type: 'report', data: { by: 'client' } });
  t.true(await client.run(`return app.unschedule('from-client')`));
  t.deepEqual(await app.schedules(), []);
});

test('the owner and a client racing on the same ticks add each tick once', async (t) => {
  t.timeout(120_000);
  const dir = await tempDataDir(t, 'schedules-race');
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  await app.setTypeTimeout('report', 30);
  const minute = 60_000;
  // A day ahead, on a whole hour: the owner's own ticker finds nothing due yet, so only the passes below add its ticks.
  const t0 = Math.ceil((Date.now() + 86_400_000) / 3_600_000) * 3_600_000;
  await app.jobs.setSchedule({ name: 'raced', spec: { everyMs: minute }, type: 'report', data: null, priority: 0, backfill: { withinMs: 30 * minute }, setAt: t0, nextTick: t0 + minute });
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  const now = t0 + 20 * minute;
  const inClient = client.run<Record<string, string[]>>(`
    const { tickSchedules } = await lib.import(${TICKS});
    const passes = await Promise.all([1, 2, 3].map(() => tickSchedules(app.jobs, ${now})));
    return passes.map((pass) => pass.added.raced ?? []).flat();
  `);
  const inOwner = Promise.all([1, 2, 3].map(() => tickSchedules(app.jobs, now)));
  const added = [...((await inClient) as unknown as string[]), ...(await inOwner).flatMap((pass) => pass.added.raced ?? [])];
  const expected = Array.from({ length: 20 }, (_, index) => tickJobId('raced', t0 + (index + 1) * minute));
  t.deepEqual(added.sort(), expected);
  t.deepEqual((await app.getJobs('report')).map((job) => job.id).sort(), expected);
});
