// A notifier dies; its subscriptions move to its successor. When that
// successor dies too while it is being asked, the subscription goes on to
// the next one, as a fresh subscribe does, instead of ending with
// `unavailable` (found by the fault-injection test that kills notifiers in a
// row).

import { type ActorId, createActorSystem } from '@jobtree/actors';
import test from 'ava';
import { SubscriptionHub } from '../../packages/jobtree/src/app/subscription-hub.js';
import fakeNotifier from './fixtures/fake-notifier.js';

test('a subscription whose new notifier dies while resubscribing moves on to the next notifier', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const first = await system.spawn(fakeNotifier, {});
  const dying = await system.spawn(fakeNotifier, { dieOnSubscribe: true });
  const third = await system.spawn(fakeNotifier, {});
  // The successor of each notifier, as jobs_server would start them.
  const next = new Map<ActorId | undefined, ActorId>([
    [undefined, first.id],
    [first.id, dying.id],
    [dying.id, third.id],
  ]);
  const asked: (ActorId | undefined)[] = [];
  const hub = new SubscriptionHub(system, {
    notifierOf: async (_type, previous) => {
      asked.push(previous);
      return next.get(previous);
    },
    resubscribeTimeoutMs: 10_000,
  });
  t.teardown(() => hub.close());
  const sub = await hub.subscribe('mail', 'm1');
  await system.kill(first);
  const deadline = Date.now() + 10_000;
  while (!asked.includes(dying.id) && !sub.ended && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.false(sub.ended, `the subscription ended: ${String(sub.error ?? '')}`);
  t.true(asked.includes(dying.id), 'the hub went on to the notifier after the one that died');
});
