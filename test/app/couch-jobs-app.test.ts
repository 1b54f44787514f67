// The couch_jobs tests (couch_jobs_tests.erl) that need the application: the
// server and its per-type children, restarts on bad messages, subscriptions,
// and re-enqueueing by the activity monitor.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import { T1, T2, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

const J1 = 'j1';
const J2 = 'j2';

test.serial('type_timeouts_and_server: a type with a timeout gets an activity monitor and a notifier; clearing it stops them', async (t) => {
  const { app } = await startTempApp(t);
  for (const type of [T1, T2]) {
    t.truthy(app.system.whereis(`activity_monitor:${type}`));
    t.truthy(app.system.whereis(`notifier:${type}`));
    t.truthy(app.system.whereis(`type_monitor:${type}`));
  }
  await app.clearTypeTimeout(T2);
  t.is(app.system.whereis(`activity_monitor:${T2}`), undefined);
  t.is(app.system.whereis(`notifier:${T2}`), undefined);
  await eventually(() => app.system.whereis(`type_monitor:${T2}`) === undefined, 5_000, 'the linked type monitor to end');
  t.truthy(app.system.whereis(`notifier:${T1}`), 'the other type keeps its children');
  await app.setTypeTimeout(T2, 5);
  t.truthy(app.system.whereis(`notifier:${T2}`));
  t.deepEqual((await app.getTypes()).sort(), [T1, T2]);
});

test.serial('dead_notifier_restarts_jobs_server: a dead notifier makes the server crash and restart, and it re-creates the children', async (t) => {
  const { app } = await startTempApp(t);
  const server = app.system.whereis('jobs_server');
  const notifier = app.system.whereis(`notifier:${T1}`);
  const monitor = app.system.whereis('activity_monitor_sup');
  await app.system.kill(`notifier:${T1}`);
  await restarted(app, 'jobs_server', server);
  const newNotifier = await restarted(app, `notifier:${T1}`, notifier);
  t.not(newNotifier, notifier);
  t.is(app.system.whereis('activity_monitor_sup'), monitor, 'rest_for_one leaves older siblings alone');
  const tree = app.system.tree();
  t.is(tree.children.find((node) => node.name === 'jobs_server')?.restarts, 1);
});

for (const [name, kind] of [
  ['jobs_server', 'server'],
  [`notifier:${T1}`, 'notifier'],
  [`activity_monitor:${T1}`, 'activity_monitor'],
] as const) {
  test.serial(`bad_cast_restarts_${kind}: a cast it does not understand stops ${name}, and it comes back`, async (t) => {
    const { app } = await startTempApp(t);
    const before = app.system.whereis(name)!;
    const down = app.system.monitor(before);
    app.system.cast(name, { type: 'garbage' });
    const reason = await down;
    t.like(reason, { error: { code: 'bad_cast' } });
    await restarted(app, name, before);
  });

  test.serial(`bad_call_restarts_${kind}: ${name} replies to a call it does not understand, then stops and comes back`, async (t) => {
    const { app } = await startTempApp(t);
    const before = app.system.whereis(name)!;
    const down = app.system.monitor(before);
    const reply = await app.system.call(name, { type: 'garbage' }, 5_000);
    t.deepEqual(reply, { error: 'bad_call' });
    t.like(await down, { error: { code: 'bad_call' } });
    await restarted(app, name, before);
  });

  test.serial(`bad_info_restarts_${kind}: an info message it does not understand stops ${name}, and it comes back`, async (t) => {
    const { app } = await startTempApp(t);
    const before = app.system.whereis(name)!;
    const down = app.system.monitor(before);
    // An exit signal from a process it is not linked to is, for a jobs
    // actor (they trap exits), a message it does not understand.
    app.system.actors.exit(before, { shutdown: 'stray' });
    t.like(await down, { error: { code: 'bad_info' } });
    await restarted(app, name, before);
  });
}

test.serial('subscribe: the current state and data, then running on accept and on update, then finished; an ended subscription gives nothing more', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, { z: 1 });
  await t.throwsAsync(app.subscribe('xyz', J1), { instanceOf: JobsError });
  await t.throwsAsync(app.subscribe(T1, 'j5'), { instanceOf: JobsError, code: 'not_found' });
  const first = await app.subscribe(T1, J1);
  t.is(first.state, 'pending');
  t.deepEqual(first.data, { z: 1 });
  t.is(await app.subscribe(T1, J1), first, 'subscribing twice gives the same subscription');
  await app.unsubscribe(first);
  const sub = await app.subscribe(T1, J1);
  t.not(sub, first, 'after unsubscribe, subscribing again gives a new subscription');
  t.is(sub.state, 'pending');
  t.deepEqual(sub.data, { z: 1 });

  const job = await app.accept(T1);
  t.like(await app.wait(sub, undefined, 5_000), { type: T1, id: J1, state: 'running', data: { z: 1 } });
  // Every update is a running event of its own.
  const updated = await app.update(job!, { z: 2 });
  t.like(await app.wait(sub, undefined, 5_000), { type: T1, id: J1, state: 'running', data: { z: 2 } });
  await app.finish(updated, { z: 3 });
  t.like(await app.wait(sub, 'finished', 5_000), { type: T1, id: J1, state: 'finished', data: { z: 3 } });
  t.true(sub.ended);
  t.is(await app.wait(sub, undefined, 50), 'timeout', 'the final event is handed out once');
  t.is(await app.wait(sub, 'finished', 50), 'timeout', 'also with a state filter');

  const finished = await app.subscribe(T1, J1);
  t.is(finished.state, 'finished');
  t.deepEqual(finished.data, { z: 3 });
  t.true(finished.ended, 'a finished job gives an already-ended subscription');
  const events = [];
  for await (const event of finished) events.push(event);
  t.deepEqual(events, []);
  await app.remove(T1, J1);
  await t.throwsAsync(app.subscribe(T1, J1), { instanceOf: JobsError, code: 'not_found' });
});

test.serial('a subscription to a finished job answers one wait with its state, then times out', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, {});
  await app.finish((await app.accept(T1))!, { done: 1 });
  const sub = await app.subscribe(T1, J1);
  t.true(sub.ended);
  t.like(await app.wait(sub, 'finished', 1_000), { state: 'finished', data: { done: 1 } });
  t.is(await app.wait(sub, 'finished', 50), 'timeout');
  t.is(await app.wait([sub], undefined, 50), 'timeout');
});

test.serial('the iterator yields each state change and ends after finished', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, { step: 0 });
  const sub = await app.subscribe(T1, J1);
  const seen: string[] = [];
  const reading = (async () => {
    for await (const event of sub) seen.push(event.state);
  })();
  const job = await app.accept(T1);
  await eventually(() => seen.includes('running'), 10_000, 'running');
  await app.finish(job!);
  await reading;
  t.deepEqual(seen, ['running', 'finished']);
});

test.serial('remove_when_subscribed_and_pending: removing a pending job sends not_found and ends the subscription', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, { x: 1 });
  const sub = await app.subscribe(T1, J1);
  t.is(sub.state, 'pending');
  await app.remove(T1, J1);
  t.deepEqual(await app.wait(sub, undefined, 5_000), { type: T1, id: J1, state: 'not_found', data: undefined });
  t.true(sub.ended);
  t.is(await app.wait(sub, undefined, 50), 'timeout');
});

test.serial('remove_when_subscribed_and_running: removing a running job sends not_found, and its worker gets halt', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, { z: 5 });
  const sub = await app.subscribe(T1, J1);
  t.is(sub.state, 'pending');
  const job = await app.accept(T1);
  t.like(await app.wait(sub, undefined, 5_000), { state: 'running' });
  await app.remove(T1, J1);
  t.deepEqual(await app.wait(sub, undefined, 5_000), { type: T1, id: J1, state: 'not_found', data: undefined });
  t.is(await app.wait(sub, undefined, 50), 'timeout');
  await t.throwsAsync(app.update(job!), { instanceOf: JobsError, code: 'halt' });
});

test.serial('subscribe_wait_multiple: waiting on several subscriptions takes the oldest event, keeps the others, and filters by state', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, {});
  await app.add(T1, J2, {});
  const s1 = await app.subscribe(T1, J1);
  const s2 = await app.subscribe(T1, J2);
  t.is(s1.state, 'pending');
  t.is(s2.state, 'pending');
  const subs = [s1, s2];
  // Either job may be taken first: each accept gives one running event.
  const p1 = await app.accept(T1);
  t.like(await app.wait(subs, undefined, 5_000), { state: 'running' });
  t.is(await app.wait(subs, undefined, 50), 'timeout');
  const p2 = await app.accept(T1);
  t.like(await app.wait(subs, undefined, 5_000), { state: 'running' });
  t.is(await app.wait(subs, undefined, 50), 'timeout');
  const u1 = await app.update(p1!, { q: 5 });
  const u2 = await app.update(p2!, { r: 6 });
  // Each update is there, in either order.
  const updates = [await app.wait(subs, 'running', 5_000), await app.wait(subs, 'running', 5_000)];
  t.deepEqual(
    updates.map((event) => (event === 'timeout' ? 'timeout' : JSON.stringify(event.data))).sort(),
    ['{"q":5}', '{"r":6}'],
  );
  // One finish: one finished event only; the filter applies to every subscription.
  await app.finish(u1);
  t.like(await app.wait(subs, 'finished', 5_000), { state: 'finished', data: { q: 5 } });
  t.is(await app.wait(subs, 'finished', 50), 'timeout');
  // The other finishes, but unsubscribing drops its queued event.
  await app.finish(u2);
  await eventually(() => s1.ended && s2.ended, 5_000, 'both subscriptions to end');
  await app.unsubscribe(s1);
  await app.unsubscribe(s2);
  t.is(await app.wait(subs, 'finished', 50), 'timeout');
});

test.serial('unsubscribe drops the events already queued and ends the subscription', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, J1, {});
  const sub = await app.subscribe(T1, J1);
  const job = await app.accept(T1);
  await eventually(() => sub.lastKnown.state === 'running', 10_000, 'the running event to be queued');
  await app.unsubscribe(sub);
  t.true(sub.ended);
  t.is(await app.wait(sub, 'running', 200), 'timeout');
  await app.finish(job!);
  t.is(await app.wait(sub, undefined, 300), 'timeout');
  await t.throwsAsync(app.unsubscribe({} as never), { instanceOf: JobsError, code: 'invalid_subscription' });
  await t.throwsAsync(app.wait([], undefined, 10), { instanceOf: JobsError, code: 'invalid_subscription' });
  await t.throwsAsync(app.wait(sub, 'bogus' as never, 10), { instanceOf: JobsError, code: 'invalid_option' });
});

test.serial('enqueue_inactive: the activity monitor re-enqueues a job whose worker went silent for a whole timeout', async (t) => {
  const { app } = await startTempApp(t, { activityMonitorMaxJitterMs: 0 }, { [T1]: 1 });
  await app.add(T1, J1, { a: 1 });
  const sub = await app.subscribe(T1, J1);
  const job = await app.accept(T1);
  t.like(await app.wait(sub, 'running', 10_000), { state: 'running' });
  const silentSince = Date.now();
  t.like(await app.wait(sub, 'pending', 10_000), { state: 'pending' }, 'the silent job is pending again');
  const waited = Date.now() - silentSince;
  t.true(waited >= 1_000, `re-enqueued after ${waited} ms, not before a whole timeout`);
  await t.throwsAsync(app.update(job!), { instanceOf: JobsError, code: 'halt' });
  const again = await app.accept(T1);
  t.is(again?.id, J1);
});

test.serial('a job kept alive by updates is never re-enqueued', async (t) => {
  // A 2 s timeout: a silent job is re-enqueued 2 to 3.5 s after its last
  // update, well inside the 5 s this runs, and a stall of the machine under
  // 1.8 s between two updates leaves it running.
  const { app } = await startTempApp(t, { activityMonitorMaxJitterMs: 0 }, { [T1]: 2 });
  await app.add(T1, J1, {});
  let job = (await app.accept(T1))!;
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    job = await app.update(job);
  }
  t.is(await app.getJobState(T1, J1), 'running');
  await app.finish(job);
});

test.serial('with a sped-up clock, a 60-second type timeout re-enqueues a silent job in about a second', async (t) => {
  const { app } = await startTempApp(t, { clockSpeed: 60, activityMonitorMaxJitterMs: 0 }, { [T1]: 60 });
  await app.add(T1, J1, {});
  const sub = await app.subscribe(T1, J1);
  await app.accept(T1);
  t.like(await app.wait(sub, 'running', 10_000), { state: 'running' });
  const silentSince = Date.now();
  t.like(await app.wait(sub, 'pending', 20_000), { state: 'pending' });
  const waited = Date.now() - silentSince;
  // 60 virtual seconds are one real second; the re-enqueue comes after 1 to 1.75 timeouts.
  t.true(waited >= 900 && waited < 10_000, `re-enqueued after ${waited} ms`);
});

test.serial('use_fabric_transaction_object: a job added in the application\'s transaction is enqueued with its writes, or not at all', async (t) => {
  const { app } = await startTempApp(t);
  const key = Buffer.from('app:order:1');
  const waiting = app.accept(T1, { timeout: 10_000 });
  await t.throwsAsync(
    app.database.doTransaction(async (tx) => {
      tx.set(key, Buffer.from('placed'));
      await app.in(tx).add(T1, 'aborted', { order: 0 });
      throw new Error('the application changed its mind');
    }),
    { message: 'the application changed its mind' },
  );
  t.is(await app.getJobState(T1, 'aborted'), undefined);
  await app.database.doTransaction(async (tx) => {
    tx.set(key, Buffer.from('placed'));
    await app.in(tx).add(T1, J1, { order: 1 });
  });
  const job = await waiting;
  t.is(job?.id, J1, 'the committed add woke the blocked worker');
  t.deepEqual(job?.data, { order: 1 });
  const sub = await app.subscribe(T1, J1);
  await app.database.doTransaction(async (tx) => {
    tx.set(key, Buffer.from('shipped'));
    await app.in(tx).finish(job!, { shipped: true });
  });
  t.like(await app.wait(sub, 'finished', 10_000), { state: 'finished', data: { shipped: true } });
  t.is((await app.database.doTransaction((tx) => tx.get(key)))?.toString(), 'shipped');
});
