// A flow subscription in a process that shares a store owned by another
// process: the owner's notifiers serve each job of the tree, and the client
// gets them as one stream, ending with the root's end, as in the owner;
// its own subscription to a job of the flow gets that job's events too.

import test from 'ava';
import { type FlowStateChange, startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

test('a client subscribes to a flow the owner runs: every job of the tree, in order per job, ending with the root', async (t) => {
  const dir = await tempDataDir(t, 'flow-subscription');
  const owner = await Peer.start(t, { kind: 'app', path: dir, options: { typeMonitorHoldoffMs: 0 } });
  t.is(owner.role, 'owner');
  await owner.run(`await app.setTypeTimeout('report', 30); await app.setTypeTimeout('part', 30)`);
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'client');
  await app.addFlow({ type: 'report', id: 'r', children: [{ type: 'part', id: 'a' }, { type: 'report', id: 'sub', children: [{ type: 'part', id: 'b' }] }] });
  // The client's own subscription to a job of the flow and the flow's are served apart in the owner: both get every event.
  const alone = await app.subscribe('part', 'b');
  const sub = await app.subscribeFlow('report', 'r');
  t.like(sub.tree, { id: 'r', state: 'waiting', children: [{ id: 'a', state: 'pending' }, { id: 'sub', state: 'waiting' }] });
  const events: FlowStateChange[] = [];
  const done = (async () => {
    for await (const event of sub) events.push(event);
  })();
  // The owner runs every job, children first, one at a time (the two parts in whichever order the store gives them).
  for (const [type, ids] of [['part', ['a', 'b']], ['part', ['a', 'b']], ['report', ['sub']], ['report', ['r']]] as const) {
    await owner.run(`const job = await app.accept(${JSON.stringify(type)}); if (!${JSON.stringify(ids)}.includes(job.id)) throw new Error('took ' + job.id); await app.finish(job, { by: job.id });`);
  }
  await done;
  const statesOf = (id: string) => events.filter((event) => event.id === id).map((event) => event.state);
  for (const id of ['a', 'b', 'sub', 'r']) t.is(statesOf(id).at(-1), 'finished', id);
  t.like(
    events.find((event) => event.id === 'b' && event.state === 'finished'),
    { type: 'part', parent: { type: 'report', id: 'sub' }, data: { by: 'b' } },
  );
  t.deepEqual(events.at(-1), { type: 'report', id: 'r', parent: undefined, state: 'finished', data: { by: 'r' } });
  t.like(await app.wait(alone, 'finished', 10_000), { id: 'b', state: 'finished', data: { by: 'b' } });
  // A notifier may fold the states between two reads into the last one: the sub-report is seen past waiting, whatever came between.
  t.false(statesOf('sub').includes('waiting'), 'the sub-report is seen leaving waiting');
});
