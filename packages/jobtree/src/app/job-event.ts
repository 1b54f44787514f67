// The mailbox message a subscription delivers: what a notifier casts to a
// subscriber (an actor, or the app's inbox on the main thread) on each state
// change of a job it subscribed to.

import type { JobState, JsonValue } from '@jobtree/core';

/** A job's state as a subscription reports it: `not_found` once the job was removed. */
export type SubscriptionState = JobState | 'not_found';

/**
 * One state change of a subscribed job, as an actor receives it in
 * `handleCast`. `running` comes on accept and on every update (with the
 * data as updated), `pending` when the job is enqueued again, `finished`
 * when it finishes and `not_found` when it is removed; the last two end the
 * subscription.
 */
export interface JobEvent {
  type: 'job_event';
  /** The subscription this event belongs to (`subscribe`'s `ref`). */
  ref: string;
  jobType: string;
  id: string;
  state: SubscriptionState;
  data: JsonValue | undefined;
}

export function isJobEvent(msg: unknown): msg is JobEvent {
  return typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'job_event';
}

/** Whether `state` ends a subscription. */
export function isTerminal(state: SubscriptionState): boolean {
  return state === 'finished' || state === 'not_found';
}
