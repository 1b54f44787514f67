// Waiting for a registered name to change hands, woken by the actor
// system's spawned and exited events: a processor restarting under user_sup
// waits so for the one it replaces to let go of its name.

import { createActorSystem } from '@jobtree/actors';
import test from 'ava';
import { nameReleased, watchNames } from '../../packages/jobtree/src/app/name-change.js';
import fakeNotifier from './fixtures/fake-notifier.js';

const FAR = () => performance.now() + 10 * 60_000;

test('nameReleased resolves once the holder of the name exits, not when another actor starts', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const holder = await system.spawn(fakeNotifier, {}, { name: 'processor:mail' });
  let released = false;
  const waiting = nameReleased(system.events, (name) => system.whereis(name), 'processor:mail', FAR()).then(() => {
    released = true;
  });
  await system.spawn(fakeNotifier, {}, { name: 'processor:other' });
  await new Promise((resolve) => setImmediate(resolve));
  t.false(released);
  await system.kill(holder);
  await waiting;
  t.is(system.whereis('processor:mail'), undefined);
});

test('nameReleased gives up at its deadline when the name stays taken', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const holder = await system.spawn(fakeNotifier, {}, { name: 'processor:mail' });
  await nameReleased(system.events, (name) => system.whereis(name), 'processor:mail', performance.now() + 50);
  t.is(system.whereis('processor:mail'), holder.id);
});

test('a watch wakes on the start of a watched name and then stops listening', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const before = system.events.listenerCount('spawned') + system.events.listenerCount('exited');
  const watch = watchNames(system.events, ['notifier:mail'], FAR());
  await system.spawn(fakeNotifier, {}, { name: 'notifier:mail' });
  await watch.changed;
  t.is(system.events.listenerCount('spawned') + system.events.listenerCount('exited'), before);
});

test('a watch stopped by hand, or given an aborted signal, resolves and leaves no listener', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const before = system.events.listenerCount('spawned') + system.events.listenerCount('exited');
  const stopped = watchNames(system.events, ['notifier:mail'], FAR());
  stopped.stop();
  await stopped.changed;
  const ended = new AbortController();
  ended.abort();
  await watchNames(system.events, ['notifier:mail'], FAR(), ended.signal).changed;
  t.is(system.events.listenerCount('spawned') + system.events.listenerCount('exited'), before);
});
