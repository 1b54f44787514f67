import { type ChildInfo, type ChildSpec, SupervisorError, startSupervisor } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent } from './fixtures/next-event.js';
import { code } from './fixtures/outcomes.js';
import { test } from './fixtures/shared-system.js';
import worker from './fixtures/worker.js';

function actorOf(children: ChildInfo[], id: string): string {
  const actor = children.find((child) => child.id === id)?.actor;
  if (actor === undefined || actor === 'restarting') throw new Error(`child ${id} is not running`);
  return actor;
}

test('startChild adds a child after the others; a second one with the same id is refused', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a')] });
  const started = nextEvent(sup.events, 'child_started');
  const ref = await sup.startChild(dedicated('b'));
  if (ref === undefined) throw new Error('no process');
  t.like(await started, { id: 'b', actor: ref.id, type: 'worker' });
  t.is(await system.call(ref, { type: 'ping' }), 'pong');
  t.deepEqual(
    (await sup.whichChildren()).map((child) => child.id),
    ['a', 'b'],
  );

  const running = await t.throwsAsync(sup.startChild(pooled('b')), { instanceOf: SupervisorError });
  t.is(running.code, 'already_started');
  t.is(running.actor, ref.id);
  await sup.terminateChild('b');
  t.is(await code(sup.startChild(pooled('b'))), 'already_present');
  t.is(await code(sup.startChild({ id: 'c' } as ChildSpec)), 'invalid_spec');
});

test('startChild of a child whose init fails reports start_failed and keeps nothing', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [] });
  const error = await t.throwsAsync(sup.startChild(pooled('bad', { failInit: 'nope' })), { instanceOf: SupervisorError });
  t.is(error.code, 'start_failed');
  t.is(error.childId, 'bad');
  t.like(error.reason, { error: { message: 'nope' } });
  t.deepEqual(await sup.whichChildren(), []);
});

test('terminateChild keeps the spec of a permanent child, restartChild brings it back, deleteChild forgets it', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a'), pooled('b')] });
  const before = await sup.whichChildren();
  const down = system.monitor({ id: actorOf(before, 'a') });
  await sup.terminateChild('a');
  t.is(await down, 'shutdown');
  t.deepEqual(await sup.whichChildren(), [
    { id: 'a', actor: undefined, type: 'worker', restart: 'permanent' },
    { id: 'b', actor: actorOf(before, 'b'), type: 'worker', restart: 'permanent' },
  ]);
  t.deepEqual(await sup.countChildren(), { specs: 2, active: 1, supervisors: 0, workers: 2 });
  await sup.terminateChild('a');

  const restarted = await sup.restartChild('a');
  if (restarted === undefined) throw new Error('no process');
  t.not(restarted.id, actorOf(before, 'a'));
  t.is(await system.call(restarted, { type: 'ping' }), 'pong');
  t.is(await code(sup.restartChild('a')), 'running');
  t.is(await code(sup.deleteChild('a')), 'running');

  await sup.terminateChild('a');
  await sup.deleteChild('a');
  t.deepEqual(
    (await sup.whichChildren()).map((child) => child.id),
    ['b'],
  );
  t.is(await code(sup.deleteChild('a')), 'not_found');
  t.is(await code(sup.restartChild('a')), 'not_found');
  t.is(await code(sup.terminateChild('a')), 'not_found');
  t.is(await code(sup.terminateChild({ id: '<0.999999>' })), 'not_found');
});

test('terminateChild by ActorRef on a one_for_one supervisor answers not_found and leaves the child running, as OTP', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a')] });
  const running = await sup.whichChild('a');
  if (running.actor === undefined || running.actor === 'restarting') throw new Error('a is not running');
  const ref = { id: running.actor };

  const error = await t.throwsAsync(sup.terminateChild(ref), { instanceOf: SupervisorError });
  t.is(error.code, 'not_found');
  t.is(await system.call(ref, { type: 'ping' }), 'pong');
  t.deepEqual(await sup.whichChild('a'), running);
  // The ref leads to the spec id, which terminateChild takes.
  await sup.terminateChild((await sup.whichChild(ref)).id);
  t.is((await sup.whichChild('a')).actor, undefined);
});

test('terminateChild of a temporary child forgets its spec', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    children: [pooled('t', {}, { restart: 'temporary' })],
  });
  await sup.terminateChild('t');
  t.deepEqual(await sup.whichChildren(), []);
  t.is(await code(sup.restartChild('t')), 'not_found');
});

test('a failed restart is retried; meanwhile the child shows as restarting and refuses restartChild/deleteChild', async (t) => {
  const { system } = t.context;
  let attempt = 0;
  let attemptTwoBegan!: () => void;
  const attemptTwo = new Promise<void>((resolve) => {
    attemptTwoBegan = resolve;
  });
  let failAttemptTwo!: () => void;
  const gate = new Promise<void>((resolve) => {
    failAttemptTwo = resolve;
  });
  const flaky: ChildSpec = {
    id: 'flaky',
    async start(ctx) {
      attempt += 1;
      if (attempt === 2) {
        attemptTwoBegan();
        await gate;
        throw new Error('not yet');
      }
      return ctx.spawn(worker, { label: `attempt ${attempt}` }, { link: true });
    },
  };
  const sup = await startSupervisor(system, { strategy: 'one_for_one', intensity: 5, children: [flaky] });
  const first = actorOf(await sup.whichChildren(), 'flaky');
  const restarted = nextEvent(sup.events, 'child_restarted');
  system.kill({ id: first });
  await attemptTwo;
  // Queued while attempt 2 runs, so answered after it failed and before the retry.
  const which = sup.whichChildren();
  const restart = code(sup.restartChild('flaky'));
  const remove = code(sup.deleteChild('flaky'));
  await new Promise((resolve) => setImmediate(resolve));
  failAttemptTwo();

  t.deepEqual(await which, [{ id: 'flaky', actor: 'restarting', type: 'worker', restart: 'permanent' }]);
  t.is(await restart, 'restarting');
  t.is(await remove, 'restarting');
  const event = await restarted;
  t.is(attempt, 3);
  t.is(event.previous, undefined, 'the retry replaces no process');
  t.like(await system.call({ id: event.actor }, { type: 'args' }), { label: 'attempt 3' });
  t.deepEqual(await sup.countChildren(), { specs: 1, active: 1, supervisors: 0, workers: 1 });
});

test('a child that keeps failing to restart uses up the intensity and stops the supervisor', async (t) => {
  const { system } = t.context;
  let attempts = 0;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    intensity: 3,
    children: [
      {
        id: 'doomed',
        async start(ctx) {
          attempts += 1;
          if (attempts > 1) throw new Error('cannot start again');
          return ctx.spawn(worker, {}, { link: true });
        },
      },
    ],
  });
  const down = system.monitor(sup.ref);
  const reached = nextEvent(sup.events, 'intensity_reached');
  system.kill({ id: actorOf(await sup.whichChildren(), 'doomed') });
  t.like(await reached, { restarts: 4, intensity: 3 });
  t.is(await down, 'shutdown');
  t.is(attempts, 4, 'the first start and three failed restarts');
});

test('calls to a supervisor that has stopped fail with noproc', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [] });
  await sup.stop();
  t.is(await code(sup.whichChildren()), 'noproc');
});

test('startSupervisor can register the supervisor under a name', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [] }, { name: 'my_sup' });
  t.is(system.whereis('my_sup'), sup.ref.id);
});

test('a stray message does not take the supervisor down', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a')] });
  const before = await sup.whichChildren();
  system.cast(sup.ref, null as never);
  system.cast(sup.ref, { type: 'nonsense' } as never);
  t.like(await system.call(sup.ref, 42 as never), { ok: false, error: { code: 'invalid_request' } });
  t.like(await system.call(sup.ref, { type: 'try_again_restart', key: 'a' }), { ok: false, error: { code: 'invalid_request' } });
  t.deepEqual(await sup.whichChildren(), before);
});
