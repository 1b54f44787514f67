// What an actor's code returns is waited for when it is a thenable, as
// `await` would: its `then` is read once, a `then` that throws (read or
// called) is the actor's own failure, and only its first outcome counts.

import { type ActorSystem, createActorSystem, type ExitMessage } from '@jobtree/actors';
import test, { type ExecutionContext } from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe from './fixtures/probe.js';
import thenableReturner, { type ThenFault } from './fixtures/thenable-returner.js';

const FAULTS: ThenFault[] = ['getter', 'call', 'foreign'];

/** The error an actor crashes with when its code returned a thenable failing as `fault`. */
function expectedError(fault: ThenFault, message: string): { name: string; message?: string } {
  return fault === 'foreign' ? { name: 'TypeError' } : { name: 'Error', message };
}

/** A system of one thread for one test: an error that escaped an actor would stall or end every other actor there too. */
function oneThread(t: ExecutionContext): ActorSystem {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  return system;
}

async function othersStillRun(system: ActorSystem): Promise<unknown> {
  const other = await system.spawn(probe, {});
  return system.call(other, { op: 'echo', v: 'still running' });
}

test('an init whose thenable fails when its then is read or called fails the spawn as a throw would', async (t) => {
  const system = oneThread(t);
  for (const fault of FAULTS) {
    const error = await t.throwsAsync(system.spawn(thenableReturner, { init: fault }));
    t.like(error, { code: 'init_failed', reason: { error: expectedError(fault, 'then of init failed') } }, fault);
  }
  t.is(await othersStillRun(system), 'still running');
});

test('a cast handler whose thenable fails when its then is read or called crashes its actor, as seen by monitors and links', async (t) => {
  const system = oneThread(t);
  for (const fault of FAULTS) {
    const watcher = await system.spawn(probe, { trap: true });
    const actor = await system.spawn(thenableReturner, {});
    await system.call(watcher, { op: 'link', to: actor.id });
    // The link reaches the actor before the cast from the main thread does.
    await system.call(watcher, { op: 'call', to: actor.id, msg: { op: 'reads' } });
    const down = system.monitor(actor);
    system.cast(actor, { op: 'fault', fault });
    const reason = { error: expectedError(fault, 'then of handleCast failed') };
    t.like(await down, reason, fault);
    const exit = await eventually(
      async () => (await system.call<ExitMessage[]>(watcher, { op: 'infos' })).find((m) => m.type === 'EXIT'),
      'EXIT',
    );
    t.like(exit, { from: actor.id, reason }, fault);
  }
  t.is(await othersStillRun(system), 'still running');
});

test('a call handler whose thenable fails when its then is read or called crashes its actor; the caller hears the exit', async (t) => {
  const system = oneThread(t);
  for (const fault of FAULTS) {
    const actor = await system.spawn(thenableReturner, {});
    const down = system.monitor(actor);
    const error = await t.throwsAsync(system.call(actor, { op: 'fault', fault }));
    const reason = { error: expectedError(fault, 'then of handleCall failed') };
    t.like(error, { code: 'exit', reason }, fault);
    t.like(await down, reason, fault);
  }
  t.is(await othersStillRun(system), 'still running');
});

test('a terminate whose thenable fails when its then is read or called ends its actor with the exit reason it had', async (t) => {
  const system = oneThread(t);
  for (const fault of FAULTS) {
    const actor = await system.spawn(thenableReturner, { terminate: fault });
    const down = system.monitor(actor);
    t.is(await system.call(actor, { op: 'stop', reason: { shutdown: fault } }), 'stopping');
    t.deepEqual(await down, { shutdown: fault }, fault);
  }
  t.is(await othersStillRun(system), 'still running');
});

test('the then of a thenable a handler returns is read once', async (t) => {
  const system = oneThread(t);
  const actor = await system.spawn(thenableReturner, {});
  t.is(await system.call(actor, { op: 'counted', v: 'answered' }), 'answered');
  t.is(await system.call(actor, { op: 'reads' }), 1);
});

test('a thenable that calls back more than once settles its message once, with its first outcome', async (t) => {
  const system = oneThread(t);
  const actor = await system.spawn(thenableReturner, {});
  t.is(await system.call(actor, { op: 'twice' }), 'first');
  // Had the second resolve counted, its state would read -1; had the reject counted, the actor would be gone.
  t.is(await system.call(actor, { op: 'reads' }), 0);
});
