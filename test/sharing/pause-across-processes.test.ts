// A pause is in the store, not in a process: a client of a shared store that
// pauses a type stops the owner's processor from starting its jobs, the
// owner's pause stops a client's processor, and a resume in either process
// lets the other run the backlog.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

const GATE = new URL('../app/fixtures/gate-handler.ts', import.meta.url).href;
/** Long enough for an idle processor to have taken a due job several times over (it waits on the store's watch). */
const QUIET_MS = 500;

async function ownerApp(t: ExecutionContext, path: string) {
  const app = await startJobs({ path, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'owner');
  return app;
}

async function eventually(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("a client's pause stops the owner's processor; the client's resume lets it run the backlog", async (t) => {
  t.timeout(120_000);
  const dir = await tempDataDir(t, 'pause-client');
  const app = await ownerApp(t, dir);
  await app.setTypeTimeout('mail', 30);
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  await client.run(`await app.pause('mail')`);
  t.true(await app.isPaused('mail'));
  const { default: gate } = await import(GATE);
  await app.process('mail', gate, { threads: 1, maxJobs: 2 });
  await app.add('mail', 'm1', { dir });
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  t.false(existsSync(join(dir, 'm1.started')));
  t.is(await app.getJobState('mail', 'm1'), 'pending');
  t.deepEqual(await client.run(`return (await app.getPausedTypes()).map((paused) => paused.type)`), ['mail']);
  await client.run(`await app.resume('mail')`);
  await eventually(async () => (await app.getJobState('mail', 'm1')) === 'finished', 30_000, 'm1 to run after the resume');
  t.true(existsSync(join(dir, 'm1.started')));
});

test("the owner's pause stops a client's processor; the owner's resume lets it run the backlog", async (t) => {
  t.timeout(120_000);
  const dir = await tempDataDir(t, 'pause-owner');
  const app = await ownerApp(t, dir);
  await app.setTypeTimeout('mail', 30);
  const worker = await Peer.start(t, { kind: 'app', path: dir });
  t.is(worker.role, 'client');
  await app.pause('mail');
  await worker.run(`const { default: gate } = await lib.import(${JSON.stringify(GATE)}); await app.process('mail', gate, { threads: 1, maxJobs: 2 });`);
  await app.add('mail', 'm1', { dir });
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  t.false(existsSync(join(dir, 'm1.started')));
  t.is(await app.getJobState('mail', 'm1'), 'pending');
  t.true(await worker.run(`return app.isPaused('mail')`));
  await app.resume('mail');
  await eventually(async () => (await app.getJobState('mail', 'm1')) === 'finished', 30_000, 'm1 to run in the client after the resume');
  t.like(await app.getJob('mail', 'm1'), { result: { ranIn: worker.pid } });
});
