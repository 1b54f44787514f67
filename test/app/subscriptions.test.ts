// Subscriptions beyond the couch_jobs list: inside actors (mailbox
// messages), dead subscribers, many at once, and what close() does to them.

import test from 'ava';
import { JobsError } from '@jobtree/core';
import type { JobEvent } from 'jobtree';
import subscriber, { type SubscriberMessage } from './fixtures/subscriber-actor.js';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

test.serial('an actor subscriber gets each state change as a mailbox message', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  const actor = await app.system.startActor('subscriber', subscriber, undefined);
  await app.add(T1, 'j', { a: 1 });
  const reply = await app.system.call<{ ref: string; state: string }, SubscriberMessage>(actor, { type: 'subscribe', jobType: T1, id: 'j' });
  t.is(reply.state, 'pending');
  t.truthy(reply.ref);
  const job = await app.accept(T1);
  const events = async () => app.system.call<JobEvent[], SubscriberMessage>(actor, { type: 'events' });
  await eventually(async () => (await events()).some((event) => event.state === 'running'), 10_000, 'running');
  await app.finish(job!, { done: 1 });
  await eventually(async () => (await events()).some((event) => event.state === 'finished'), 10_000, 'finished');
  const last = (await events()).at(-1)!;
  t.like(last, { type: 'job_event', ref: reply.ref, jobType: T1, id: 'j', state: 'finished', data: { done: 1 } });
});

test.serial('a dead subscriber is unsubscribed by its notifier', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  const actor = await app.system.actors.spawn(subscriber, undefined);
  await app.add(T1, 'j', {});
  await app.system.call<unknown, SubscriberMessage>(actor, { type: 'subscribe', jobType: T1, id: 'j' });
  t.is(await app.system.call(`notifier:${T1}`, { type: 'count' }), 1);
  await app.system.kill(actor);
  await eventually(async () => (await app.system.call(`notifier:${T1}`, { type: 'count' })) === 0, 10_000, 'the subscription to go');
  t.pass();
});

test.serial('1,000 subscriptions to 1,000 jobs all get finished', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 30 });
  const ids = Array.from({ length: 1_000 }, (_, i) => `job-${i}`);
  for (const id of ids) await app.add(T1, id, { id });
  const subs = await Promise.all(ids.map((id) => app.subscribe(T1, id)));
  const finishing = (async () => {
    for (;;) {
      const job = await app.accept(T1);
      if (job === undefined) return;
      await app.finish(job, { done: job.id });
    }
  })();
  const finished = await Promise.all(subs.map((sub) => app.wait(sub, 'finished', 60_000)));
  await finishing;
  t.true(finished.every((event, i) => event !== 'timeout' && event.id === ids[i] && event.state === 'finished'));
  t.is(await app.system.call(`notifier:${T1}`, { type: 'count' }), 0, 'finished subscriptions are dropped');
});

test.serial('close() ends every subscription iterator and leaves no host thread', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  await app.add(T1, 'j', {});
  const sub = await app.subscribe(T1, 'j');
  const reading = (async () => {
    const seen = [];
    for await (const event of sub) seen.push(event);
    return seen;
  })();
  const pendingWait = app.wait(sub, 'finished');
  await app.close();
  t.deepEqual(await reading, []);
  t.is(await pendingWait, 'timeout');
  t.deepEqual(app.system.threads(), []);
  await t.throwsAsync(app.add(T1, 'k', {}), { instanceOf: JobsError, code: 'closed' });
  await t.throwsAsync(app.subscribe(T1, 'j'), { instanceOf: JobsError, code: 'closed' });
  await app.close();
});

test.serial('a running job left by close() is re-enqueued by the next start', async (t) => {
  const { app, dir } = await startTempApp(t, { activityMonitorMaxJitterMs: 0 }, { [T1]: 1 });
  await app.add(T1, 'j', {});
  t.truthy(await app.accept(T1));
  await app.close();
  const { startJobs } = await import('jobtree');
  const again = await startJobs({ path: dir, threads: 1, activityMonitorMaxJitterMs: 0 });
  t.teardown(() => again.close());
  await eventually(async () => (await again.getJobState(T1, 'j')) === 'pending', 10_000, 'the job to be pending again');
  t.is((await again.accept(T1))?.id, 'j');
});

test.serial('user actors start under user_sup and are stopped with the app', async (t) => {
  const { app } = await startTempApp(t, {}, {});
  const actor = await app.system.startActor('sub', subscriber, undefined, { name: 'my_subscriber' });
  t.is(app.system.whereis('my_subscriber'), actor.id);
  const userSup = app.system.tree().children.find((node) => node.name === 'user_sup');
  t.is(userSup?.children[0]?.id, actor.id);
  const down = app.system.monitor(actor);
  await app.close();
  t.is(await down, 'shutdown');
});

test.serial('subscribe and wait check their arguments', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  for (const bad of [undefined, '', 42, {}]) {
    await t.throwsAsync(app.subscribe(bad as never, 'j'), { instanceOf: JobsError, code: 'invalid_job_type' });
    await t.throwsAsync(app.subscribe(T1, bad as never), { instanceOf: JobsError, code: 'invalid_job_id' });
  }
  await t.throwsAsync(app.subscribe('no-such-type', 'j'), { instanceOf: JobsError, code: 'no_type_timeout' });
  await app.add(T1, 'j', {});
  const sub = await app.subscribe(T1, 'j');
  await t.throwsAsync(app.wait(sub, undefined, -1), { instanceOf: JobsError, code: 'invalid_timeout' });
  await t.throwsAsync(app.wait([sub, 'x' as never]), { instanceOf: JobsError, code: 'invalid_subscription' });
});

test('startJobs rejects bad options with invalid_option', async (t) => {
  const { startJobs } = await import('jobtree');
  for (const bad of [null, 'x', { threads: 0 }, { threads: 1.5 }, { typeMonitorHoldoffMs: -1 }, { typeCheckPeriodMs: Number.NaN }, { bogus: 1 }]) {
    await t.throwsAsync(startJobs(bad as never), { instanceOf: JobsError, code: 'invalid_option' }, JSON.stringify(bad));
  }
});
