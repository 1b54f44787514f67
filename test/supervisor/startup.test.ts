import type { ActorContext, ExitReason } from '@jobtree/actors';
import {
  type ChildSpec,
  type ChildStartedEvent,
  SupervisorError,
  type SupervisorSpec,
  createSupervisorEvents,
  startSupervisor,
} from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { test } from './fixtures/system.js';
import worker from './fixtures/worker.js';

test('children start one after the other in spec order', async (t) => {
  const { system } = t.context;
  const events = createSupervisorEvents();
  const started: ChildStartedEvent[] = [];
  events.on('child_started', (event) => started.push(event));
  const sup = await startSupervisor(
    system,
    { strategy: 'one_for_one', children: [pooled('a'), dedicated('b'), pooled('c')] },
    { events },
  );
  t.is(sup.events, events);
  t.deepEqual(
    started.map((event) => event.id),
    ['a', 'b', 'c'],
  );
  t.deepEqual(
    (await sup.whichChildren()).map((child) => [child.id, child.actor]),
    started.map((event) => [event.id, event.actor]),
  );
});

test('when a child fails to start, the started ones are stopped in reverse order and startup fails with the reason', async (t) => {
  const { system } = t.context;
  const attempts: string[] = [];
  const downs: Promise<ExitReason>[] = [];
  const tracked = (id: string, args = {}): ChildSpec => ({
    id,
    async start(ctx) {
      attempts.push(id);
      const ref = await ctx.spawn(worker, { label: id, ...args }, { link: true });
      downs.push(system.monitor(ref));
      return ref;
    },
  });
  const error = await t.throwsAsync(
    startSupervisor(system, {
      strategy: 'one_for_one',
      children: [tracked('a'), tracked('b'), pooled('broken', { failInit: 'no database' }), tracked('c')],
    }),
    { instanceOf: SupervisorError },
  );
  t.is(error.code, 'start_failed');
  t.is(error.childId, 'broken');
  t.like(error.reason, { error: { message: 'no database' } });
  t.deepEqual(attempts, ['a', 'b'], 'c is never started');
  t.deepEqual(await Promise.all(downs), ['shutdown', 'shutdown']);
});

test("a start function's 'ignore' keeps the spec without a process; restartChild runs it again", async (t) => {
  const { system } = t.context;
  let ignoring = true;
  const maybe: ChildSpec = {
    id: 'maybe',
    start: async (ctx) => (ignoring ? 'ignore' : ctx.spawn(worker, { label: 'maybe' }, { link: true })),
  };
  const once: ChildSpec = { id: 'once', restart: 'temporary', start: async () => 'ignore' };
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a'), maybe, once] });
  t.deepEqual(
    (await sup.whichChildren()).map((child) => [child.id, child.actor === undefined]),
    [
      ['a', false],
      ['maybe', true],
    ],
    'an ignored temporary child is not kept at all',
  );
  ignoring = false;
  const ref = await sup.restartChild('maybe');
  if (ref === undefined) throw new Error('no process');
  t.is(await system.call(ref, { type: 'ping' }), 'pong');
  t.deepEqual(await sup.countChildren(), { specs: 2, active: 2, supervisors: 0, workers: 2 });
});

test('a start function that forgets to link still gets its child supervised', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [{ id: 'unlinked', start: (ctx: ActorContext<unknown>) => ctx.spawn(worker, { label: 'unlinked' }) }],
  });
  const [child] = await sup.whichChildren();
  const restarted = new Promise<string>((resolve) => sup.events.once('child_restarted', (event) => resolve(event.id)));
  system.kill({ id: child?.actor as string });
  t.is(await restarted, 'unlinked');
});

const invalidSpecs: [string, unknown][] = [
  ['an unknown strategy', { strategy: 'one_for_some', children: [] }],
  ['a negative intensity', { strategy: 'one_for_one', intensity: -1, children: [] }],
  ['a zero period', { strategy: 'one_for_one', period: 0, children: [] }],
  ['children that are not an array', { strategy: 'one_for_one', children: {} }],
  ['two children with one id', { strategy: 'one_for_one', children: [pooled('x'), pooled('x')] }],
  ['a simple_one_for_one without its template', { strategy: 'simple_one_for_one', children: [] }],
  ['a child without an id', { strategy: 'one_for_one', children: [{ start: { actor: worker } }] }],
  ['a child with a start that is no actor', { strategy: 'one_for_one', children: [{ id: 'x', start: { actor: {} } }] }],
  ['a child with an unknown restart type', { strategy: 'one_for_one', children: [pooled('x', {}, { restart: 'sometimes' as never })] }],
  ['a child with a negative shutdown', { strategy: 'one_for_one', children: [pooled('x', {}, { shutdown: -5 })] }],
  ['a child with an unknown type', { strategy: 'one_for_one', children: [pooled('x', {}, { type: 'manager' as never })] }],
  [
    'a child that asks for link itself',
    { strategy: 'one_for_one', children: [{ id: 'x', start: { actor: worker, options: { link: true } } }] },
  ],
];

test('startSupervisor rejects a malformed spec with invalid_spec before starting anything', async (t) => {
  let spawned = 0;
  t.context.system.events.on('spawned', () => {
    spawned += 1;
  });
  for (const [what, spec] of invalidSpecs) {
    const error = await t.throwsAsync(startSupervisor(t.context.system, spec as SupervisorSpec), {
      instanceOf: SupervisorError,
    });
    t.is(error?.code, 'invalid_spec', what);
  }
  t.is(spawned, 0, 'no actor was spawned, not even the supervisor');
});
