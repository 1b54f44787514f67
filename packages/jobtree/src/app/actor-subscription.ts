// Subscriptions made from inside an actor: the notifier casts each
// `JobEvent` to the actor, which gets it in `handleCast` like any other
// message (or takes it with `ctx.receive`). In a process of a shared store
// that another process owns, the owner's notifier does, through this
// process's relay (actor-subscription-relay.ts).

import type { ActorContext, MonitorRef } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import { jobsCore } from './bridge-client.js';
import type { NotifierMessage, SubscribeReply } from './notifier.js';

/** What `subscribeJob` gives an actor: the job's state now and, for a pending or running job, the subscription. */
export type ActorSubscription = SubscribeReply & {
  /**
   * A monitor on the notifier (for a live subscription): its `DOWN` arrives
   * in `handleInfo` if the notifier dies, and the actor subscribes again
   * (the new subscription's state says what happened meanwhile).
   */
  notifierMonitor: MonitorRef | undefined;
};

/**
 * Subscribes the calling actor to a job. Events arrive as `JobEvent` casts
 * (`{ type: 'job_event', ref, jobType, id, state, data }`); `finished` and
 * `not_found` end the subscription. Rejects with `no_type_timeout` when the
 * type has no notifier (no timeout).
 */
export async function subscribeJob(ctx: ActorContext<never> | ActorContext<unknown>, type: string, id: string): Promise<ActorSubscription> {
  const context = ctx as ActorContext<unknown>;
  const notifier = context.whereis(`notifier:${type}`);
  if (notifier === undefined) {
    // In a process of a shared store that another process owns, the owner's notifier serves it, relayed.
    const relayed = await jobsCore(ctx).relaySubscribe(type, id, context.self.id);
    if (relayed === undefined) {
      throw new JobsError('no_type_timeout', `job type ${JSON.stringify(type)} has no notifier: set its timeout (the app starts one)`);
    }
    const { relay, ...reply } = relayed;
    return { ...reply, notifierMonitor: reply.ref === undefined ? undefined : context.monitor(relay) };
  }
  const reply = await context.call<SubscribeReply, NotifierMessage>(notifier, { type: 'subscribe', id, subscriber: context.self.id }, 30_000);
  return { ...reply, notifierMonitor: reply.ref === undefined ? undefined : context.monitor(notifier) };
}

/** Ends an actor's subscription; its events already queued in the mailbox stay there. */
export async function unsubscribeJob(ctx: ActorContext<never> | ActorContext<unknown>, type: string, ref: string): Promise<void> {
  const context = ctx as ActorContext<unknown>;
  const notifier = context.whereis(`notifier:${type}`);
  if (notifier === undefined) {
    await jobsCore(ctx).relayUnsubscribe(ref);
    return;
  }
  await context.call<boolean, NotifierMessage>(notifier, { type: 'unsubscribe', ref }, 30_000);
}
