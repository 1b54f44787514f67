// The owner of a shared store goes away, by closing or by being killed: a
// client takes the store over (its role becomes 'owner'), its own calls
// carry on, a process started afterwards connects to it, and the periodic
// actors now run there. What the old owner was serving ends with a typed,
// retryable error (`owner_lost`), never a hang and never `closed` (the
// client's handle is not closed); a job the dead owner was running comes
// back through the new owner's activity monitor.

import { JobsError, openJobs } from '@jobtree/core';
import test from 'ava';
import { bounded, eventually, ownerPidOf, Peer, tempDataDir } from './fixtures/peers.js';

const HANDLER = JSON.stringify(new URL('./fixtures/pid-handler.ts', import.meta.url).href);

/** A snippet that settles `promise` (an expression) into `state[name]` as { value } or { error: { name, code } }. */
function settleInto(name: string, promise: string): string {
  return `state.${name} = ${promise}.then((value) => ({ value }), (error) => ({ error: { name: error.name, code: error.code } }));`;
}

test('an owner closing cleanly hands over: the client becomes the owner, its calls and the periodic actors carry on, and a new process connects to it', async (t) => {
  const dir = await tempDataDir(t, 'handover-close');
  const first = await Peer.start(t, { kind: 'app', path: dir });
  t.is(first.role, 'owner');
  await first.run(`await app.setTypeTimeout('mail', 30); await app.add('mail', 'before', {});`);
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  t.is(await client.run(`state.sub = await app.subscribe('mail', 'before'); return state.sub.state`), 'pending');
  // In flight as the owner closes: an accept waiting for a job of a type with none.
  await client.run(`await app.setTypeTimeout('idle', 30); ${settleInto('waiting', "app.accept('idle', { timeout: 60000 })")}`);

  await first.closeAndExit();

  await eventually(async () => (await client.run('return app.role')) === 'owner', 30_000, 'the client to take the store over');
  t.deepEqual(await client.run('return state.waiting'), { error: { name: 'JobsError', code: 'owner_lost' } });
  t.deepEqual(
    await client.run(`return app.wait(state.sub, undefined, 15000).then((event) => ({ event }), (error) => ({ error: { name: error.name, code: error.code } }))`),
    { error: { name: 'JobsError', code: 'owner_lost' } },
  );
  // Its calls carry on, on the store it owns now; the periodic actors of the store run here now.
  t.is(await client.run(`await app.add('mail', 'after', { n: 1 }); return app.getJobState('mail', 'before')`), 'pending');
  await eventually(async () => (await client.run(`return app.system.whereis('notifier:mail') !== undefined && app.system.whereis('activity_monitor:mail') !== undefined`)) === true, 30_000, 'the periodic actors of mail in the new owner');

  // A process started now (this test's own) connects to the new owner.
  const third = await openJobs({ path: dir });
  t.teardown(() => third.close());
  t.is(third.role, 'client');
  t.is(ownerPidOf(third), client.pid);
  t.deepEqual((await third.getJobs('mail')).map((job) => job.id), ['after', 'before']);
  await third.add('mail', 'from-third', {});
  t.is(await client.run(`return app.getJobState('mail', 'from-third')`), 'pending');
});

test('after the owner is killed (SIGKILL) a client takes over: its subscriptions end with owner_lost, and the dead owner\'s running job comes back through the new owner\'s activity monitor', async (t) => {
  const dir = await tempDataDir(t, 'handover-kill');
  const first = await Peer.start(t, { kind: 'app', path: dir });
  t.is(first.role, 'owner');
  await first.run(`await app.setTypeTimeout('render', 2); const { default: handler } = await lib.import(${HANDLER}); await app.process('render', handler, { threads: 1 });`);
  // The periodic actors' clock runs 4 times faster in the client: a 2-second timeout passes in half a second.
  const client = await Peer.start(t, { kind: 'app', path: dir, options: { clockSpeed: 4 } });
  t.is(client.role, 'client');
  await client.run(`await app.add('render', 'held', { holdInPid: ${first.pid} })`);
  await eventually(async () => (await client.run(`return app.getJobState('render', 'held')`)) === 'running', 30_000, 'the job to run in the owner');
  // The client is a worker process too: its handlers, started while it is a client, must run on after the takeover.
  await client.run(`const { default: handler } = await lib.import(${HANDLER}); await app.process('render', handler, { threads: 1 });`);
  t.is(await client.run(`state.sub = await app.subscribe('render', 'held'); return state.sub.state`), 'running');
  await client.run(settleInto('waiting', "app.wait(state.sub, 'finished', 60000)"));

  await first.kill('SIGKILL');

  t.deepEqual(await client.run('return state.waiting'), { error: { name: 'JobsError', code: 'owner_lost' } });
  await eventually(async () => (await client.run('return app.role')) === 'owner', 30_000, 'the client to take the store over');
  // The job was left running for a process that is gone: only the activity monitor's re-enqueue lets a handler here finish it.
  t.like(await client.run(`const sub = await app.subscribe('render', 'held'); return app.wait(sub, 'finished', 30000)`), { state: 'finished' });

  const third = await openJobs({ path: dir });
  t.teardown(() => third.close());
  t.is(third.role, 'client');
  t.is(ownerPidOf(third), client.pid);
  t.like(await third.getJob('render', 'held'), { state: 'finished', outcome: 'succeeded', result: { ranIn: client.pid } });
  await third.add('render', 'after-kill', {});
  t.like(await client.run(`const sub = await app.subscribe('render', 'after-kill'); return app.wait(sub, 'finished', 30000)`), { state: 'finished' });
  t.like(await third.getJob('render', 'after-kill'), { outcome: 'succeeded', result: { ranIn: client.pid } });
});

test('openJobs: an owner closing ends the calls it was serving with owner_lost, and the client takes the store over', async (t) => {
  const dir = await tempDataDir(t, 'handover-jobs');
  const first = await Peer.start(t, { kind: 'jobs', path: dir });
  await first.run(`await jobs.setTypeTimeout('idle', 30); await jobs.setTypeTimeout('mail', 30); await jobs.add('mail', 'before', {});`);
  const client = await openJobs({ path: dir });
  t.teardown(() => client.close());
  t.is(client.role, 'client');
  const waiting = client.accept('idle', { timeout: 60_000 });
  // The accept is in the owner's hands once a later call has been answered (calls are answered in order of arrival).
  t.is(await client.getJobState('mail', 'before'), 'pending');

  await first.closeAndExit();

  await t.throwsAsync(bounded(waiting, 30_000, 'the accept in flight to end'), { instanceOf: JobsError, code: 'owner_lost' });
  t.is(await client.getJobState('mail', 'before'), 'pending');
  t.is(client.role, 'owner');
  t.is(ownerPidOf(client), process.pid);
});
