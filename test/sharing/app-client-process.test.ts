// startJobs in two processes on one embedded store: the second is a client
// of the first. A client runs app.process handlers in its own process, its
// takes and finishes going to the owner; its subscriptions are served by
// the owner's notifiers, which push the events; and the periodic actors
// (activity monitors, notifiers, the pruner) run once per store, in the owner, even for
// a type whose timeout a client set. The app's cancel and retry in a
// client reach the owner's store.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobsError } from '@jobtree/core';
import test, { type ExecutionContext } from 'ava';
import { startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

const HANDLER = JSON.stringify(new URL('./fixtures/pid-handler.ts', import.meta.url).href);
const ABORT_MARKER = JSON.stringify(new URL('../processors/fixtures/abort-marker.ts', import.meta.url).href);

async function ownerApp(t: ExecutionContext, path: string) {
  const app = await startJobs({ path, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'owner');
  return app;
}

test('a worker process, client of the store, runs app.process handlers on the jobs the owner adds', async (t) => {
  const dir = await tempDataDir(t, 'app-worker');
  const app = await ownerApp(t, dir);
  await app.setTypeTimeout('resize', 30);
  const worker = await Peer.start(t, { kind: 'app', path: dir });
  t.is(worker.role, 'client');
  await worker.run(`const { default: handler } = await lib.import(${HANDLER}); await app.process('resize', handler, { threads: 1, maxJobs: 4 });`);

  const ids = Array.from({ length: 12 }, (_, index) => `image-${index}`);
  await app.addMany('resize', ids.slice(0, 6).map((id) => ({ id })));
  for (const id of ids.slice(6)) await app.add('resize', id, {});
  const subs = await Promise.all(ids.map((id) => app.subscribe('resize', id)));
  for (const sub of subs) t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' }, sub.id);
  // The handlers' results, stored apart from the jobs' input through the owner.
  for (const id of ids) t.like(await app.getJob('resize', id), { outcome: 'succeeded', result: { ranIn: worker.pid } }, id);
  t.is(await app.pendingCount('resize'), 0);
  t.deepEqual(await app.getActiveJobIds('resize'), []);
});

test('the owner runs the periodic actors of the store: a client setting a type timeout starts them there, its subscriptions get pushed events, and its cancel and retry reach the owner', async (t) => {
  const dir = await tempDataDir(t, 'app-periodic');
  const app = await ownerApp(t, dir);
  await app.setTypeTimeout('own-type', 30);
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  t.is(await client.run('return app.role'), 'client');

  // setTypeTimeout resolves once the activity monitor and notifier run: in the owner.
  await client.run(`await app.setTypeTimeout('fresh', 5)`);
  t.truthy(app.system.whereis('activity_monitor:fresh'));
  t.truthy(app.system.whereis('notifier:fresh'));
  t.deepEqual(
    await client.run(`return ['fresh', 'own-type'].flatMap((type) => [app.system.whereis('activity_monitor:' + type) ?? null, app.system.whereis('notifier:' + type) ?? null])`),
    [null, null, null, null],
  );
  // Reaching the store's database is the owner's business.
  t.like(await client.run(`try { app.database; return 'reached'; } catch (error) { return { name: error.name, code: error.code }; }`), { name: 'JobsError', code: 'not_owner' });

  // A client's subscription is served by the owner's notifier of the type, which pushes each change.
  await app.add('fresh', 'job-1', {});
  t.is(await client.run(`state.sub = await app.subscribe('fresh', 'job-1'); return state.sub.state`), 'pending');
  const job = await app.accept('fresh');
  t.is(await client.run(`return app.wait(state.sub, 'running', 15000).then((event) => event.state)`), 'running');
  await app.finish(job!, { ranIn: process.pid });
  t.like(await client.run(`return app.wait(state.sub, 'finished', 15000)`), { state: 'finished', data: { ranIn: process.pid } });
  // A subscription to a finished job answers one wait with its final state.
  t.like(await client.run(`const sub = await app.subscribe('fresh', 'job-1'); return app.wait(sub, 'finished', 15000)`), { state: 'finished' });
  // cancel and retry in a client's app end and restart a job in the owner's store.
  await app.add('fresh', 'job-2', {});
  t.true(await client.run(`return app.cancel('fresh', 'job-2')`));
  t.like(await app.getJob('fresh', 'job-2'), { state: 'finished', outcome: 'cancelled' });
  await client.run(`await app.retry('fresh', 'job-2')`);
  t.is(await app.getJobState('fresh', 'job-2'), 'pending');
  t.like(await client.run(`return app.retry('fresh', 'job-2').catch((error) => ({ name: error.name, code: error.code }))`), { name: 'JobsError', code: 'not_retryable' });
  // A type without a timeout has no notifier: the client gets the owner's error.
  const inOwner = await t.throwsAsync(app.subscribe('no-timeout', 'x'), { instanceOf: JobsError });
  await t.throwsAsync(client.run(`return app.subscribe('no-timeout', 'x')`), { name: 'JobsError', code: inOwner?.code, message: inOwner?.message });
});

test("the owner's cancel and remove of jobs running in a client abort their handlers with cause cancel without waiting for a heartbeat", async (t) => {
  const dir = await tempDataDir(t, 'app-cancel');
  const app = await ownerApp(t, dir);
  // A 300 s timeout puts the client's heartbeat 100 s away: only the store's cancellation watch can abort the runs within the waits.
  await app.setTypeTimeout('long', 300);
  const worker = await Peer.start(t, { kind: 'app', path: dir });
  t.is(worker.role, 'client');
  await worker.run(`const { default: handler } = await lib.import(${ABORT_MARKER}); await app.process('long', handler, { threads: 1, maxJobs: 2 });`);
  await app.add('long', 'cancelled', { dir });
  await app.add('long', 'removed', { dir });
  await eventually(() => existsSync(join(dir, 'cancelled.running')) && existsSync(join(dir, 'removed.running')), 30_000);
  t.true(await app.cancel('long', 'cancelled'));
  t.true(await app.remove('long', 'removed'));
  // Ample for a loaded machine, yet well short of the heartbeat.
  await eventually(() => existsSync(join(dir, 'cancelled')) && existsSync(join(dir, 'removed')), 30_000);
  t.is(readFileSync(join(dir, 'cancelled'), 'utf8'), 'cancel');
  t.is(readFileSync(join(dir, 'removed'), 'utf8'), 'cancel');
  await eventually(async () => (await worker.run<number>(`return app.scheduler.of('long').stats().running`)) === 0, 30_000);
  t.like(await app.getJob('long', 'cancelled'), { state: 'finished', outcome: 'cancelled', data: { dir } });
  t.is(await app.getJobState('long', 'removed'), undefined);
});

async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("only the owner prunes a shared store: a client app's pruner removes nothing, whatever its retention", async (t) => {
  const dir = await tempDataDir(t, 'app-prune');
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', retention: false });
  t.teardown(() => app.close());
  await app.setTypeTimeout('kept', 30);
  const ids = ['a', 'b', 'c', 'd'];
  await app.addMany(
    'kept',
    ids.map((id) => ({ id })),
  );
  await app.jobs.completeMany((await app.jobs.acceptMany('kept', ids.length)).map((job) => ({ job })));
  const client = await Peer.start(t, {
    kind: 'app',
    path: dir,
    options: { retention: { default: { succeeded: { maxCount: 0 }, failed: { maxCount: 0 }, cancelled: { maxCount: 0 } }, intervalSeconds: 0.05 } },
  });
  t.is(client.role, 'client');
  // Rounds go by in the client's pruner; none finds a type to prune.
  const stats = `return app.system.call('pruner', { type: 'stats' })`;
  for (let waited = 0; ((await client.run(stats)) as { rounds: number }).rounds < 3; waited += 50) {
    if (waited > 15_000) throw new Error("the client's pruner ran no rounds");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.like(await client.run(stats), { removed: { succeeded: 0, failed: 0, cancelled: 0 }, batches: 0 });
  t.deepEqual((await app.getJobs('kept', { outcome: 'succeeded' })).map((job) => job.id).sort(), ids);
});
