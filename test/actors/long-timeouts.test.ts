// Timeouts longer than setTimeout's largest delay (2^31 - 1 ms, about 24.8
// days). Node fires such a timer after 1 ms with a warning; a call, an inbox
// receive or a receive inside an actor given a month must wait, not give up
// at once.

import { createActorSystem } from '@jobtree/actors';
import test from 'ava';
import probe from './fixtures/probe.js';

const system = createActorSystem({ threads: 1 });
test.after.always(() => system.shutdown());

const MONTH_MS = 31 * 24 * 3600 * 1000;

test('a call with a timeout of a month waits for a reply that takes 100 ms', async (t) => {
  const actor = await system.spawn(probe, {});
  t.is(await system.call(actor, { op: 'sleep', ms: 100, v: 'late reply' }, MONTH_MS), 'late reply');
});

test('an actor calling with a timeout of a month gets the reply, not a timeout', async (t) => {
  const caller = await system.spawn(probe, {});
  const callee = await system.spawn(probe, {});
  const answer = await system.call(caller, { op: 'call', to: callee.id, msg: { op: 'sleep', ms: 100, v: 'slow' }, timeoutMs: MONTH_MS });
  t.deepEqual(answer, { ok: 'slow' });
});

test('a receive inside an actor with a timeout of a month waits for its message', async (t) => {
  const actor = await system.spawn(probe, {});
  const waiting = system.call(actor, { op: 'receive', tag: 'wanted', timeoutMs: MONTH_MS }, 5_000);
  await new Promise((resolve) => setTimeout(resolve, 100));
  system.cast(actor, { op: 'record', v: 'wanted' });
  t.deepEqual(await waiting, { op: 'record', v: 'wanted' });
});

test('an inbox receive with a timeout of a month waits for its message', async (t) => {
  const inbox = system.inbox<string>();
  t.teardown(() => inbox.close());
  const got = inbox.receive(undefined, MONTH_MS);
  setTimeout(() => system.cast(inbox.ref, 'after 100 ms'), 100);
  t.is(await got, 'after 100 ms');
});

test('a sendAfter-style timer of a month has not fired after 100 ms, and clear() stops it', async (t) => {
  const { LongTimeout } = await import('../../packages/actors/src/max-timer.js');
  let fired = false;
  const timer = new LongTimeout(() => {
    fired = true;
  }, MONTH_MS);
  await new Promise((resolve) => setTimeout(resolve, 100));
  timer.clear();
  t.false(fired);
});
