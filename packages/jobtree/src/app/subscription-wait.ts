// `wait` on subscriptions: the oldest queued event of any of them (in a
// given state, when asked), whichever way their events arrive (from this
// process's notifiers, or pushed by the process that owns a shared store).

import { MAX_TIMER_MS } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import type { SubscriptionState } from './job-event.js';
import { type JobStateChange, Subscription } from './subscription.js';

/**
 * The oldest event of any of `subs` in `state` (any state when omitted),
 * taken from its subscription; the others' events stay queued. `'timeout'`
 * after `timeoutMs`, or when none of them can get another event.
 */
export async function waitForEvent(
  subs: Subscription | Subscription[],
  state: SubscriptionState | undefined,
  timeoutMs: number,
): Promise<JobStateChange | 'timeout'> {
  const list = Array.isArray(subs) ? subs : [subs];
  if (list.length === 0 || !list.every((sub) => sub instanceof Subscription)) {
    throw new JobsError('invalid_subscription', 'wait takes a Subscription or a non-empty array of them');
  }
  if (state !== undefined && !['pending', 'running', 'finished', 'not_found'].includes(state)) {
    throw new JobsError('invalid_option', `wait's state is pending, running, finished or not_found, got ${JSON.stringify(state)}`);
  }
  if (!(timeoutMs >= 0)) throw new JobsError('invalid_timeout', `wait's timeout is a number of ms >= 0, got ${String(timeoutMs)}`);
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    let best: { sub: Subscription; event: { seq: number } } | undefined;
    for (const sub of list) {
      const event = sub.peek(state);
      if (event !== undefined && (best === undefined || event.seq < best.event.seq)) best = { sub, event };
    }
    if (best !== undefined) return best.sub.take(best.event as Parameters<Subscription['take']>[0]);
    const failed = list.find((sub) => sub.ended && sub.error !== undefined);
    if (failed !== undefined) throw failed.error;
    // An already-ended subscription (made on a finished job) answers one wait with its final state.
    for (const sub of list) {
      const final = sub.takeFinal(state);
      if (final !== undefined) return final;
    }
    if (list.every((sub) => sub.ended)) return 'timeout';
    const remaining = deadline - performance.now();
    if (remaining <= 0) return 'timeout';
    await new Promise<void>((resolve) => {
      const offs = list.map((sub) => sub.onChange(finish));
      const timer = Number.isFinite(remaining) ? setTimeout(finish, Math.min(remaining, MAX_TIMER_MS)) : undefined;
      function finish(): void {
        for (const off of offs) off();
        if (timer !== undefined) clearTimeout(timer);
        resolve();
      }
    });
  }
}
