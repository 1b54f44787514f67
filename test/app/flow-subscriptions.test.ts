// A subscription to a whole flow (app.subscribeFlow): every state change of
// any job of the tree arrives on one stream, each naming the job and its
// parent, in order per job, and the stream ends with the root's end; the
// children a cancelled root took with it are reported before it; a job of
// the flow that the app also subscribes to alone gives both subscriptions
// all of its events; an actor subscribes to a flow and tells each event's
// job and parent from its ref.

import test from 'ava';
import { type FlowStateChange, type FlowSubscription, JobsError } from 'jobtree';
import flowSubscriber, { type FlowEventSeen, type FlowSubscriberMessage } from './fixtures/flow-subscriber-actor.js';
import { T1, T2, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

const T3 = 't3';
const ORDER = ['waiting', 'pending', 'running', 'finished'];

async function collect(sub: FlowSubscription): Promise<FlowStateChange[]> {
  const events: FlowStateChange[] = [];
  for await (const event of sub) events.push(event);
  return events;
}

/** The states reported for one job, in the order they came. */
function statesOf(events: ReadonlyArray<{ id: string; state: string }>, id: string): string[] {
  return events.filter((event) => event.id === id).map((event) => event.state);
}

/** Whether `states` follow the order a job's life gives them (some may be skipped, none repeated out of turn). */
function inLifeOrder(states: string[]): boolean {
  const at = states.map((state) => ORDER.indexOf(state));
  // A state may repeat: a running job's activity stamp or data changing is an event of its own.
  return at.every((index, i) => index >= 0 && (i === 0 || index >= (at[i - 1] as number)));
}

test('a nested flow: every job of the tree on one stream, in order per job, each naming its parent, ending with the root', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({
    type: T1,
    id: 'top',
    children: [{ type: T1, id: 'middle', children: [{ type: T2, id: 'leaf', data: { n: 1 } }] }, { type: T2, id: 'side', data: { n: 2 } }],
  });
  const sub = await app.subscribeFlow(T1, 'top');
  t.like(sub.tree, { type: T1, id: 'top', state: 'waiting', children: [{ id: 'middle', state: 'waiting', children: [{ id: 'leaf', state: 'pending' }] }, { id: 'side' }] });
  const events = collect(sub);
  await app.process(T2, async (job) => ({ n: (job.data as { n: number }).n }));
  await app.process(T1, async (_job, ctx) => (await ctx.childResults()).length);
  const stream = await events;
  t.true(sub.ended);

  for (const id of ['leaf', 'side', 'middle', 'top']) {
    const states = statesOf(stream, id);
    t.true(inLifeOrder(states), `${id}: ${states.join(' → ')}`);
    t.is(states.at(-1), 'finished', `${id} ends finished`);
  }
  // Parents become pending only once their children have ended, so they are seen leaving `waiting`
  // (a notifier may fold a short run's states into its end: `running` need not be seen).
  t.false(statesOf(stream, 'middle').includes('waiting'));
  t.deepEqual(stream.at(-1), { type: T1, id: 'top', parent: undefined, state: 'finished', data: null });
  const parents = new Map(stream.map((event) => [event.id, event.parent]));
  t.deepEqual(parents.get('leaf'), { type: T1, id: 'middle' });
  t.deepEqual(parents.get('middle'), { type: T1, id: 'top' });
  t.deepEqual(parents.get('side'), { type: T1, id: 'top' });
  // Every job's end comes before the root's, which is last. Between jobs of
  // different types the stream sets no order (each type's notifier reports
  // its own jobs, in order per job): that a parent ran once its child had
  // ended shows in what its handler read of its children.
  const endOf = (id: string) => stream.findIndex((event) => event.id === id && event.state === 'finished');
  for (const id of ['leaf', 'side', 'middle']) t.true(endOf(id) < endOf('top'), `${id} ends before the root`);
  t.like(await app.getJob(T1, 'middle'), { outcome: 'succeeded', result: 1 });
  t.like(await app.getJob(T1, 'top'), { outcome: 'succeeded', result: 2 });
});

test("a child that fails under 'fail': its end, then the root's, ends the stream while a sibling still waits to run", async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 30, [T2]: 30, [T3]: 30 });
  await app.addFlow({ type: T1, id: 'p', onChildFailure: 'fail', children: [{ type: T2, id: 'bad' }, { type: T3, id: 'slow' }] });
  const sub = await app.subscribeFlow(T1, 'p');
  const events = collect(sub);
  await app.process(T2, () => {
    throw new Error('no such file');
  }, { attempts: 1 });
  const stream = await events;
  t.is(statesOf(stream, 'bad').at(-1), 'finished');
  t.deepEqual(statesOf(stream, 'p'), ['finished']);
  t.deepEqual(statesOf(stream, 'slow'), [], 'the sibling no processor runs stays pending');
  t.like(stream.at(-1), { id: 'p', state: 'finished' });
  t.like(await app.getJob(T1, 'p'), { outcome: 'failed', error: { name: 'ChildFailedError' } });
});

test('cancelling the root: the children it cancelled are reported before its own end', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'a' }, { type: T1, id: 'b', children: [{ type: T2, id: 'c' }] }] });
  const sub = await app.subscribeFlow(T1, 'p');
  const events = collect(sub);
  await app.cancel(T1, 'p');
  const stream = await events;
  for (const id of ['a', 'b', 'c']) t.deepEqual(statesOf(stream, id), ['finished'], id);
  t.like(stream.at(-1), { id: 'p', state: 'finished' });
  t.is(stream.length, 4);
});

test('a job subscribed to alone and through its flow: each subscription gets all of its events', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  const alone = await app.subscribe(T2, 'c');
  const flow = await app.subscribeFlow(T1, 'p');
  const events = collect(flow);
  const job = await app.accept(T2);
  t.like(await app.wait(alone, 'running', 10_000), { id: 'c', state: 'running' });
  await app.finish(job!, { done: true });
  t.like(await app.wait(alone, 'finished', 10_000), { id: 'c', state: 'finished', data: { done: true } });
  const parent = await app.accept(T1);
  await app.finish(parent!);
  const stream = await events;
  t.is(statesOf(stream, 'c').at(-1), 'finished');
  t.like(stream.find((event) => event.id === 'c' && event.state === 'finished'), { data: { done: true } });
});

test('unsubscribe ends a flow subscription; a job in no flow and a missing one are refused', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  const sub = await app.subscribeFlow(T1, 'p');
  const events = collect(sub);
  await app.unsubscribe(sub);
  t.deepEqual(await events, []);
  t.true(sub.ended);
  await app.add(T2, 'alone', {});
  await t.throwsAsync(app.subscribeFlow(T2, 'alone'), { instanceOf: JobsError, code: 'not_in_flow' });
  await t.throwsAsync(app.subscribeFlow(T2, 'nobody'), { instanceOf: JobsError, code: 'not_found' });
});

test('a flow that has ended already: the subscription holds its tree and ends at once', async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  await app.cancel(T1, 'p');
  const sub = await app.subscribeFlow(T1, 'p');
  t.like(sub.tree, { state: 'finished', outcome: 'cancelled', children: [{ id: 'c', outcome: 'cancelled' }] });
  t.deepEqual(await collect(sub), [{ type: T1, id: 'p', parent: undefined, state: 'finished', data: null }]);
});

test("an actor subscribes to a flow: each job's events arrive as its JobEvents, and the ref names the job and its parent", async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'top', children: [{ type: T1, id: 'middle', children: [{ type: T2, id: 'leaf' }] }] });
  const actor = await app.system.startActor('flow-subscriber', flowSubscriber, undefined);
  const call = <R>(msg: FlowSubscriberMessage) => app.system.call<R, FlowSubscriberMessage>(actor, msg);
  t.like(await call({ type: 'subscribe', jobType: T1, id: 'top' }), {
    tree: { id: 'top', state: 'waiting', children: [{ id: 'middle', children: [{ id: 'leaf', state: 'pending' }] }] },
    live: ['top', 'middle', 'leaf'],
  });
  for (const type of [T2, T1, T1]) {
    const job = await app.accept(type);
    await app.finish(job!);
  }
  const events = () => call<FlowEventSeen[]>({ type: 'events' });
  await eventually(async () => (await events()).some((event) => event.id === 'top' && event.state === 'finished'), 15_000, "the root's end");
  const seen = await events();
  for (const id of ['leaf', 'middle', 'top']) {
    const states = statesOf(seen, id);
    t.true(inLifeOrder(states), `${id}: ${states.join(' → ')}`);
    t.is(states.at(-1), 'finished');
  }
  t.like(seen.find((event) => event.id === 'leaf'), { type: T2, parent: { type: T1, id: 'middle' } });
  t.like(seen.find((event) => event.id === 'middle'), { type: T1, parent: { type: T1, id: 'top' } });
  t.like(seen.find((event) => event.id === 'top'), { parent: undefined });
  await t.throwsAsync(call({ type: 'subscribe', jobType: T2, id: 'nobody' }), { message: /not_found/ });
});

test("a job added under the id of a child that retention pruned is not followed by the flow's subscriptions", async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'pruned' }, { type: T2, id: 'kept' }] });
  const first = await app.accept(T2);
  const pruned = first?.id === 'pruned' ? first : await app.accept(T2);
  await app.finish(pruned!);
  t.like(await app.jobs.pruneFinished(T2, 'succeeded', { maxCount: 0 }), { removed: 1 });
  await app.add(T2, 'pruned', { unrelated: true });

  const sub = await app.subscribeFlow(T1, 'p');
  t.like(sub.tree, { children: [{ id: 'kept' }, { id: 'pruned', state: undefined }] });
  const actor = await app.system.startActor('flow-subscriber', flowSubscriber, undefined);
  const call = <R>(msg: FlowSubscriberMessage) => app.system.call<R, FlowSubscriberMessage>(actor, msg);
  t.like(await call({ type: 'subscribe', jobType: T1, id: 'p' }), { live: ['p', 'kept'] });

  const events = collect(sub);
  // The unrelated job runs to its end before the flow's last child does: neither subscription reports it.
  await app.process(T2, async (job) => job.id);
  await app.process(T1, async () => 'report');
  const stream = await events;
  t.deepEqual(statesOf(stream, 'pruned'), []);
  t.is(stream.at(-1)?.id, 'p');
  await eventually(async () => (await call<FlowEventSeen[]>({ type: 'events' })).some((event) => event.id === 'p' && event.state === 'finished'), 15_000, "the root's end");
  t.deepEqual(statesOf(await call<FlowEventSeen[]>({ type: 'events' }), 'pruned'), []);
});

test("a child run again after its subscription reported its end is reported by its state then at the root's end", async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'again' }] });
  const sub = await app.subscribeFlow(T1, 'p');
  const stream: FlowStateChange[] = [];
  const done = (async () => {
    for await (const event of sub) stream.push(event);
  })();
  await app.finish((await app.accept(T2))!);
  await eventually(async () => statesOf(stream, 'again').includes('finished'), 15_000, "the child's end reported");
  const parent = await app.accept(T1);
  // Added again once its parent has left `waiting`: the same job, its link to its parent kept.
  await app.add(T2, 'again', { second: true });
  await app.finish(parent!);
  await done;
  t.like(stream.findLast((event) => event.id === 'again'), { state: 'pending', data: { second: true } });
  t.is(stream.at(-1)?.id, 'p');
});

test("a child pruned after the flow's subscription reported its end reads as gone at the root's end, though a job was added since under its id", async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', onChildFailure: 'ignore', children: [{ type: T2, id: 'pruned' }, { type: T2, id: 'kept' }] });
  const sub = await app.subscribeFlow(T1, 'p');
  const stream: FlowStateChange[] = [];
  const done = (async () => {
    for await (const event of sub) stream.push(event);
  })();
  const first = await app.accept(T2);
  const pruned = first?.id === 'pruned' ? first : await app.accept(T2);
  await app.finish(pruned!);
  // Its own subscription ends with its `finished`: the prune and the new job come after.
  await eventually(async () => statesOf(stream, 'pruned').includes('finished'), 15_000, "the child's end reported");
  t.like(await app.jobs.pruneFinished(T2, 'succeeded', { maxCount: 0 }), { removed: 1 });
  await app.add(T2, 'pruned', { unrelated: true });
  await app.cancel(T1, 'p');
  await done;
  t.is(await app.getJobState(T2, 'pruned'), 'pending');
  t.false(statesOf(stream, 'pruned').includes('pending'));
  t.like(stream.findLast((event) => event.id === 'pruned'), { state: 'not_found', data: undefined });
  t.is(stream.at(-1)?.id, 'p');
});

test("a notifier that dies mid-flow: the flow's subscriptions and the app's own to the same job move to its successor, and each gets the job's end", async (t) => {
  const { app } = await startTempApp(t);
  await app.addFlow({ type: T1, id: 'p', children: [{ type: T2, id: 'c' }] });
  const alone = await app.subscribe(T2, 'c');
  const flow = await app.subscribeFlow(T1, 'p');
  const events = collect(flow);
  const before = app.system.whereis(`notifier:${T2}`);
  await app.system.kill(`notifier:${T2}`);
  await restarted(app, `notifier:${T2}`, before);
  const job = await app.accept(T2);
  await app.finish(job!, { after: 'restart' });
  t.like(await app.wait(alone, 'finished', 15_000), { id: 'c', data: { after: 'restart' } });
  await app.finish((await app.accept(T1))!);
  const stream = await events;
  t.like(stream.find((event) => event.id === 'c' && event.state === 'finished'), { data: { after: 'restart' } });
  t.like(stream.at(-1), { id: 'p', state: 'finished' });
});
