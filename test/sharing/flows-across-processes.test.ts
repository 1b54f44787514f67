// Job flows across the processes of one embedded store: a client adds a
// flow; the owner runs the children; the client runs the parent, whose
// handler reads the children's results through the owner.

import test from 'ava';
import { startJobs } from 'jobtree';
import { eventually, Peer, tempDataDir } from './fixtures/peers.js';

const FLOW_PARENT = JSON.stringify(new URL('../app/fixtures/flow-parent-handler.ts', import.meta.url).href);
const PID_HANDLER = new URL('./fixtures/pid-handler.ts', import.meta.url);

test("a client adds a flow and runs its parent, whose handler reads the children the owner ran", async (t) => {
  const dir = await tempDataDir(t, 'flows');
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'owner');
  await app.setTypeTimeout('report', 30);
  await app.setTypeTimeout('part', 30);
  const client = await Peer.start(t, { kind: 'app', path: dir });
  t.is(client.role, 'client');
  await client.run(`const { default: handler } = await lib.import(${FLOW_PARENT}); await app.process('report', handler, { threads: 1 });`);
  t.is(
    await client.run(`return app.addFlow({ type: 'report', id: 'r', data: { month: 5 }, children: [{ type: 'part', id: 'a' }, { type: 'part', id: 'b' }] })`),
    'waiting',
  );
  t.like(await client.run(`return app.getFlow('report', 'r')`), { state: 'waiting', unfinished: 2 });
  const sub = await app.subscribe('report', 'r');
  await app.process('part', PID_HANDLER, { threads: 1 });
  t.like(await app.wait(sub, 'finished', 30_000), { state: 'finished' });
  t.like(await app.getJob('report', 'r'), {
    outcome: 'succeeded',
    result: {
      input: { month: 5 },
      children: [
        { id: 'a', outcome: 'succeeded', result: { ranIn: process.pid } },
        { id: 'b', outcome: 'succeeded', result: { ranIn: process.pid } },
      ],
    },
  });
});

test('the owner killed while a child of a flow runs there: once a client owns the store, the child runs again and the parent runs with every result', async (t) => {
  const dir = await tempDataDir(t, 'flows-owner-killed');
  const owner = await Peer.start(t, { kind: 'app', path: dir });
  t.is(owner.role, 'owner');
  await owner.run(`await app.setTypeTimeout('report', 2); await app.setTypeTimeout('part', 2); const { default: handler } = await lib.import(${JSON.stringify(PID_HANDLER.href)}); await app.process('part', handler, { threads: 1 });`);
  // The periodic actors' clock runs 4 times faster in the client: a 2-second timeout passes in half a second.
  const client = await Peer.start(t, { kind: 'app', path: dir, options: { clockSpeed: 4 } });
  t.is(client.role, 'client');
  await client.run(
    `return app.addFlow({ type: 'report', id: 'r', data: { month: 6 }, children: [{ type: 'part', id: 'held', data: { holdInPid: ${owner.pid} } }, { type: 'part', id: 'quick' }] })`,
  );
  await eventually(async () => (await client.run(`return app.getJobState('part', 'held')`)) === 'running', 30_000, 'the held child to run in the owner');
  await eventually(async () => (await client.run(`return app.getJobState('part', 'quick')`)) === 'finished', 30_000, 'the other child to finish in the owner');
  await client.run(
    `const { default: part } = await lib.import(${JSON.stringify(PID_HANDLER.href)}); await app.process('part', part, { threads: 1 }); const { default: report } = await lib.import(${FLOW_PARENT}); await app.process('report', report, { threads: 1 });`,
  );

  await owner.kill('SIGKILL');

  await eventually(async () => (await client.run('return app.role')) === 'owner', 30_000, 'the client to take the store over');
  await eventually(async () => (await client.run(`return app.getJobState('report', 'r')`)) === 'finished', 30_000, 'the parent to run in the new owner');
  t.like(await client.run(`return app.getJob('report', 'r')`), {
    outcome: 'succeeded',
    result: {
      input: { month: 6 },
      children: [
        { id: 'held', outcome: 'succeeded', result: { ranIn: client.pid } },
        { id: 'quick', outcome: 'succeeded', result: { ranIn: owner.pid } },
      ],
    },
  });
});
