import type { ExitMessage } from '@jobtree/actors';
import { Supervisor, createSupervisorEvents, startSupervisor } from '@jobtree/supervisor';
import { dedicated, pooled } from './fixtures/children.js';
import { nextEvent, nextEvents } from './fixtures/next-event.js';
import probe from '../actors/fixtures/probe.js';
import parent, { type ParentMessage } from './fixtures/parent.js';
import { test } from './fixtures/shared-system.js';

test('an exit signal from its parent makes a supervisor stop its children in reverse order and exit with that reason', async (t) => {
  const { system } = t.context;
  const events = createSupervisorEvents();
  const started = nextEvents(events, 'child_started', 2);
  const owner = await system.spawn(
    parent,
    { spec: { strategy: 'one_for_one', children: [pooled('a'), dedicated('b')] }, events, trapExit: false },
    { placement: 'main' },
  );
  await started;
  const supervisor = await system.call<string, ParentMessage>(owner, { type: 'supervisor' });
  const supDown = system.monitor({ id: supervisor });
  const exited = nextEvents(events, 'child_exited', 2);

  system.exit(owner, { shutdown: 'application stopping' });
  t.deepEqual(
    (await exited).map((event) => [event.id, event.reason, event.terminated]),
    [
      ['b', 'shutdown', true],
      ['a', 'shutdown', true],
    ],
  );
  t.deepEqual(await supDown, { shutdown: 'application stopping' });
});

test("the parent gets the supervisor's `shutdown` exit when the restart intensity is exceeded", async (t) => {
  const { system } = t.context;
  const events = createSupervisorEvents();
  const owner = await system.spawn(
    parent,
    { spec: { strategy: 'one_for_one', children: [pooled('w')] }, events, trapExit: true },
    { placement: 'main' },
  );
  const supervisor = await system.call<string, ParentMessage>(owner, { type: 'supervisor' });
  const sup = new Supervisor(system, supervisor, events);
  const supDown = system.monitor({ id: supervisor });
  for (let kill = 1; kill <= 2; kill += 1) {
    const [child] = await sup.whichChildren();
    const next = kill === 1 ? nextEvent(events, 'child_restarted') : nextEvent(events, 'intensity_reached');
    system.kill({ id: child?.actor as string });
    await next;
  }
  t.is(await supDown, 'shutdown');
  const exits = await system.call<ExitMessage[], ParentMessage>(owner, { type: 'exits' });
  t.deepEqual(exits, [{ type: 'EXIT', from: supervisor, reason: 'shutdown' }]);
});

test('a supervisor started from the system has the system as its parent: system.exit stops it like a parent exit signal', async (t) => {
  const { system } = t.context;
  t.is(system.id, '<0.0>');
  const sup = await startSupervisor(system, { strategy: 'one_for_one', children: [pooled('a'), dedicated('b')] });
  const supDown = system.monitor(sup.ref);
  const exited = nextEvents(sup.events, 'child_exited', 2);

  // An exit signal from anyone but the parent is trapped and ignored, as in OTP.
  const stranger = await system.spawn(probe, {});
  await system.call(stranger, { op: 'exit', to: sup.ref.id, reason: 'shutdown' });
  await system.call(stranger, { op: 'call', to: sup.ref.id, msg: { op: 'echo', v: 0 } }); // after the signal, same path
  t.is((await sup.countChildren()).active, 2);

  system.exit(sup.ref, 'shutdown');
  t.deepEqual(
    (await exited).map((event) => [event.id, event.reason, event.terminated]),
    [
      ['b', 'shutdown', true],
      ['a', 'shutdown', true],
    ],
  );
  t.is(await supDown, 'shutdown');
});
