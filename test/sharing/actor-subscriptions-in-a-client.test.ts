// An actor in a process that shares a store owned by another process
// subscribes as in the owner: the owner's notifier serves it (relayed by
// this process's main thread), its events arrive as JobEvent casts, and
// once this process has taken the store over, the actor subscribes with
// this process's own notifier.

import test from 'ava';
import { startJobs } from 'jobtree';
import subscriber, { type SubscriberMessage } from '../app/fixtures/subscriber-actor.js';
import { eventually } from '../app/fixtures/temp-app.js';
import { Peer, tempDataDir } from './fixtures/peers.js';

type Reply = { ref: string | undefined; state: string; data: unknown };
type Event = { type: string; ref: string; jobType: string; id: string; state: string; data: unknown };

test('an actor in a client gets the events of a job the owner runs, and subscribes anew after taking the store over', async (t) => {
  const dir = await tempDataDir(t, 'actor-relay');
  const owner = await Peer.start(t, { kind: 'app', path: dir, options: { typeMonitorHoldoffMs: 0 } });
  t.is(owner.role, 'owner');
  await owner.run(`await app.setTypeTimeout('relayed', 30)`);
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'client');
  t.is(app.system.whereis('notifier:relayed'), undefined, 'no notifier runs in a client');

  const actor = await app.system.startActor('relayed-subscriber', subscriber, undefined);
  const call = <R>(msg: SubscriberMessage) => app.system.call<R, SubscriberMessage>(actor, msg);
  const events = () => call<Event[]>({ type: 'events' });

  await owner.run(`await app.add('relayed', 'job-1', { n: 1 })`);
  const reply = await call<Reply>({ type: 'subscribe', jobType: 'relayed', id: 'job-1' });
  t.is(reply.state, 'pending');
  t.truthy(reply.ref);
  await owner.run(`state.job = await app.accept('relayed')`);
  await eventually(async () => (await events()).some((event) => event.state === 'running'), 15_000, 'the running event');
  await owner.run(`await app.finish(state.job, { done: true })`);
  await eventually(async () => (await events()).some((event) => event.state === 'finished'), 15_000, 'the finished event');
  t.like((await events()).at(-1), { type: 'job_event', ref: reply.ref, jobType: 'relayed', id: 'job-1', state: 'finished', data: { done: true } });

  // A missing job answers as a notifier does: its state, no subscription.
  t.like(await call<Reply>({ type: 'subscribe', jobType: 'relayed', id: 'nobody' }), { ref: undefined, state: 'not_found' });

  // The owner dies: this process takes the store over and its own notifier serves the actor.
  await owner.kill('SIGKILL');
  await eventually(() => app.role === 'owner', 20_000, 'this process to take the store over');
  await eventually(() => app.system.whereis('notifier:relayed') !== undefined, 20_000, 'the notifier to start here');
  await app.add('relayed', 'job-2', {});
  const again = await call<Reply>({ type: 'subscribe', jobType: 'relayed', id: 'job-2' });
  t.is(again.state, 'pending');
  const job = await app.accept('relayed');
  await app.finish(job!, { local: true });
  await eventually(async () => (await events()).some((event) => event.id === 'job-2' && event.state === 'finished'), 15_000, 'the finished event of job-2');
});
