// What the app that owns a shared store serves to the other processes,
// beyond the jobs API: subscriptions (its notifiers push the events of the
// jobs a client subscribed to, as they do to its own subscribers) and the
// type check that starts a new type's activity monitor and notifier.
// Each connected process gets a subscription hub of its own, closed when it
// goes away.

import type { ActorSystem } from '@jobtree/actors';
import type { ServedCall, ServedConnection, ServedMethod } from '@jobtree/core';
import type { SubscriptionHubOptions } from './subscription-hub.js';
import { SubscriptionHub } from './subscription-hub.js';
import type { Subscription } from './subscription.js';
import type { RemoteSubscribeReply, RemoteSubscriptionEvent } from './subscribe-replies.js';

export type { RemoteSubscribeReply, RemoteSubscriptionEvent } from './subscribe-replies.js';

interface ConnectionSubscriptions {
  hub: SubscriptionHub;
  byChannel: Map<string, Subscription>;
}

export function servedAppCalls(actors: ActorSystem, hubOptions: SubscriptionHubOptions, checkTypes: () => Promise<string[]>): Map<string, ServedMethod> {
  const connections = new Map<ServedConnection, ConnectionSubscriptions>();
  const subscriptionsOf = (connection: ServedConnection): ConnectionSubscriptions => {
    let entry = connections.get(connection);
    if (entry === undefined) {
      entry = { hub: new SubscriptionHub(actors, hubOptions), byChannel: new Map() };
      connections.set(connection, entry);
      const closing = entry;
      connection.onClose(() => {
        connections.delete(connection);
        void closing.hub.close();
      });
    }
    return entry;
  };
  const methods = new Map<string, ServedMethod>();
  methods.set('subscribe', async ([type, id, channel], call: ServedCall): Promise<RemoteSubscribeReply> => {
    const entry = subscriptionsOf(call.connection);
    // Each channel is pumped on its own: two channels to one job must not share (and split) its events.
    const sub = await entry.hub.subscribe(type as string, id as string, { shared: false });
    if (sub.ended) return { state: sub.state, data: sub.data, live: false };
    entry.byChannel.set(channel as string, sub);
    // After this answer has gone out: the client learns the subscription before its events.
    setImmediate(() => void pump(sub, channel as string, call.connection, entry));
    return { state: sub.state, data: sub.data, live: true };
  });
  methods.set('unsubscribe', async ([channel], call) => {
    const entry = connections.get(call.connection);
    const sub = entry?.byChannel.get(channel as string);
    if (entry === undefined || sub === undefined) return false;
    entry.byChannel.delete(channel as string);
    await entry.hub.unsubscribe(sub);
    return true;
  });
  methods.set('checkTypes', () => checkTypes());
  return methods;
}

async function pump(sub: Subscription, channel: string, connection: ServedConnection, entry: ConnectionSubscriptions): Promise<void> {
  try {
    for await (const event of sub) connection.push(channel, { state: event.state, data: event.data } satisfies RemoteSubscriptionEvent);
    connection.push(channel, { end: true } satisfies RemoteSubscriptionEvent);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    connection.push(channel, {
      error: { code: typeof code === 'string' ? code : 'unavailable', message: error instanceof Error ? error.message : String(error) },
    } satisfies RemoteSubscriptionEvent);
  } finally {
    entry.byChannel.delete(channel);
  }
}
