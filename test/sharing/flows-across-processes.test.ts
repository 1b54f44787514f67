// Job flows across the processes of one embedded store: a client adds a
// flow; the owner runs the children; the client runs the parent, whose
// handler reads the children's results through the owner.

import test from 'ava';
import { startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

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
