// What a subscribe answers and what a pushed subscription event is, shared
// by the notifiers, the owner of a shared store serving its clients, and a
// client's relay of actors' subscriptions. A module of types alone, so that
// the jobs bridge can name them without importing the actors that use them.

import type { JsonValue } from '@jobtree/core';
import type { SubscriptionState } from './job-event.js';

/**
 * A waiting (a flow's parent), pending or running job: its state and data
 * now, and the subscription whose events follow. A finished or missing
 * job: its state (and data), and no subscription.
 */
export type SubscribeReply =
  | { ref: string; state: 'waiting' | 'pending' | 'running'; data: JsonValue | undefined }
  | { ref: undefined; state: 'finished'; data: JsonValue | undefined }
  | { ref: undefined; state: 'not_found'; data: undefined };

/** One pushed event of a remote subscription, or its end. */
export type RemoteSubscriptionEvent =
  | { state: SubscriptionState; data: unknown }
  | { end: true }
  | { error: { code: string; message: string } };

/** The answer to a remote subscribe: the job's state now, and whether events will follow. */
export interface RemoteSubscribeReply {
  state: SubscriptionState;
  data: unknown;
  live: boolean;
}

/** A relayed subscription: the notifier's reply, and the inbox to monitor in the notifier's place. */
export type RelayedSubscribeReply = SubscribeReply & { relay: string };

/** Actors' subscriptions through the owner of a shared store (see actor-subscription-relay.ts). */
export interface SubscriptionRelay {
  subscribe(type: string, id: string, subscriber: string): Promise<RelayedSubscribeReply | undefined>;
  unsubscribe(ref: string): Promise<boolean>;
}
