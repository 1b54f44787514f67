// A client's subscriptions, once they end (unsubscribed, or ended by their
// job's end), are let go: nothing of the connection to the owner keeps
// them, so a long-running client that subscribes to each job it adds (a
// server waiting for each request's job) does not grow for as long as its
// owner lives. Counted with v8.queryObjects, which collects garbage first.

import { queryObjects } from 'node:v8';
import test from 'ava';
import { type JobsApp, Subscription, startJobs } from 'jobtree';
import { Peer, tempDataDir } from './fixtures/peers.js';

const SUBSCRIPTIONS = 40;

/** Subscribes to each job and ends the subscription, half by unsubscribing, half by finishing the job; keeps no reference. */
async function subscribeAndEnd(app: JobsApp, owner: Peer): Promise<void> {
  const ids = Array.from({ length: SUBSCRIPTIONS }, (_unused, index) => `j${index}`);
  await app.addMany('mail', ids.map((id) => ({ id })));
  const subs = await Promise.all(ids.map((id) => app.subscribe('mail', id)));
  const unsubscribed = subs.slice(0, SUBSCRIPTIONS / 2);
  const finished = subs.slice(SUBSCRIPTIONS / 2);
  for (const sub of unsubscribed) await app.unsubscribe(sub);
  await owner.run(`for (let n = 0; n < ${SUBSCRIPTIONS}; n++) await app.finish(await app.accept('mail'));`);
  for (const sub of finished) for await (const _event of sub);
}

test('a client lets its ended subscriptions go while its owner lives', async (t) => {
  const dir = await tempDataDir(t, 'subscriptions-let-go');
  const owner = await Peer.start(t, { kind: 'app', path: dir });
  t.is(owner.role, 'owner');
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent' });
  t.teardown(() => app.close());
  t.is(app.role, 'client');
  await app.setTypeTimeout('mail', 30);
  await subscribeAndEnd(app, owner);
  t.is(queryObjects(Subscription, { format: 'count' }), 0);
});
