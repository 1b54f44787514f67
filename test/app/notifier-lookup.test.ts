// How a subscription finds its type's notifier: asking the jobs server to
// check the types, waiting for a server or notifier that the tree is
// restarting (woken by the actor system's events), giving up at its
// deadline, and stopping when the app ends.

import { type ActorSystem, createActorSystem } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import test from 'ava';
import { SYSTEM_NAMES } from '../../packages/jobtree/src/app/jobs-tree.js';
import { type NotifierLookupOptions, findNotifier } from '../../packages/jobtree/src/app/notifier-lookup.js';
import fakeNotifier from './fixtures/fake-notifier.js';

const NOTIFIER = 'notifier:mail';

/** A lookup whose jobs server starts the notifier of `mail` when asked (unless `startOnCheck` says not to). */
function lookupIn(system: ActorSystem, overrides: Partial<NotifierLookupOptions> & { startOnCheck?: (check: number) => boolean } = {}) {
  const checks: string[][] = [];
  const { startOnCheck = () => true, ...rest } = overrides;
  const options: NotifierLookupOptions = {
    actors: system,
    checkTypes: async () => {
      const started = startOnCheck(checks.length + 1);
      if (started && system.whereis(NOTIFIER) === undefined) await system.spawn(fakeNotifier, {}, { name: NOTIFIER });
      const watched = started ? ['mail'] : [];
      checks.push(watched);
      return watched;
    },
    hasTimeout: async (type) => type === 'mail',
    checkOpen: () => {},
    ended: new AbortController().signal,
    timeoutMs: 30_000,
    ...rest,
  };
  return { options, checks };
}

test('a type with a notifier gets it without asking the jobs server', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const notifier = await system.spawn(fakeNotifier, {}, { name: NOTIFIER });
  const { options, checks } = lookupIn(system);
  t.is(await findNotifier(options, 'mail'), notifier.id);
  t.deepEqual(checks, []);
});

test('a type without a notifier gets the one the jobs server starts when asked', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  await system.spawn(fakeNotifier, {}, { name: SYSTEM_NAMES.server });
  const { options, checks } = lookupIn(system);
  const found = await findNotifier(options, 'mail');
  t.is(found, system.whereis(NOTIFIER));
  t.is(checks.length, 1);
});

test('a type without a timeout has no notifier: undefined, without waiting for one', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  await system.spawn(fakeNotifier, {}, { name: SYSTEM_NAMES.server });
  const { options } = lookupIn(system, { startOnCheck: () => false, hasTimeout: async () => false });
  t.is(await findNotifier(options, 'mail'), undefined);
});

test('while the jobs server is restarting the lookup waits for it, then asks it', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const { options, checks } = lookupIn(system);
  const lookup = findNotifier(options, 'mail');
  // An unrelated actor's start does not make it ask a server that is not there.
  await system.spawn(fakeNotifier, {}, { name: 'someone_else' });
  t.deepEqual(checks, []);
  await system.spawn(fakeNotifier, {}, { name: SYSTEM_NAMES.server });
  t.is(await lookup, system.whereis(NOTIFIER));
  t.is(checks.length, 1);
});

test('a server that read the types before this one had a timeout is asked again', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  await system.spawn(fakeNotifier, {}, { name: SYSTEM_NAMES.server });
  const { options, checks } = lookupIn(system, { startOnCheck: (check) => check > 1 });
  t.is(await findNotifier(options, 'mail'), system.whereis(NOTIFIER));
  t.deepEqual(checks, [[], ['mail']]);
});

test('the dead notifier a subscription had is not found again: the lookup waits for its successor', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  await system.spawn(fakeNotifier, {}, { name: SYSTEM_NAMES.server });
  const previous = await system.spawn(fakeNotifier, {}, { name: NOTIFIER });
  // The server still counts the old notifier as the type's: asking it starts nothing.
  const { options } = lookupIn(system, { checkTypes: async () => ['mail'] });
  const lookup = findNotifier(options, 'mail', previous.id);
  await system.kill(previous);
  const successor = await system.spawn(fakeNotifier, {}, { name: NOTIFIER });
  t.is(await lookup, successor.id);
});

test('a lookup with no server to ask gives up at its deadline with undefined', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const { options } = lookupIn(system, { timeoutMs: 50 });
  t.is(await findNotifier(options, 'mail'), undefined);
});

test('a lookup waiting for the tree stops when the app ends, with the error the closed app throws', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const ended = new AbortController();
  let closed = false;
  const { options } = lookupIn(system, {
    ended: ended.signal,
    // Far beyond the test's own timeout: only the end of the app can settle it.
    timeoutMs: 10 * 60_000,
    checkOpen: () => {
      if (closed) throw new JobsError('closed', 'the jobs app is closed');
    },
  });
  const lookup = findNotifier(options, 'mail');
  closed = true;
  ended.abort();
  const error = await t.throwsAsync(lookup, { instanceOf: JobsError });
  t.is(error?.code, 'closed');
});
