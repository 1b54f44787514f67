// Re-creates couch_jobs_type_monitor: linked to its notifier, it waits on the
// type's activity stamp (a long poll through the bridge, as a watch cannot
// cross threads) and tells the notifier each time it changes, at most once
// per holdoff. Unlike couch_jobs_type_monitor's `timer:sleep(min(HoldOff - Dt, 0))`, the
// holdoff really holds off.
//
// It polls only while the notifier has subscriptions: told of a change while
// it has none, the notifier answers so, and the monitor waits for a `resume`
// before it polls again. Every accept and update changes the stamp, so
// without that pause each job run would cost a round trip between this
// thread and the main thread (the watch armed again, the stamp read) next to
// the job's own work, for nobody. Resumed, it polls from the stamp it last
// reported: a change made while it waited is reported at once.

import { type ActorContext, type ActorId, defineActor } from '@jobtree/actors';
import type { Versionstamp } from '@jobtree/core';
import { badMessage, hasType, refuseCall, refuseCast } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import { isTransient } from './retry-guard.js';

export interface TypeMonitorArgs {
  type: string;
  notifier: ActorId;
  /** The stamp the notifier started from. */
  since: Versionstamp | undefined;
  holdoffMs: number;
  /** The longest single wait on the stamp; the wait is then simply renewed. */
  pollTimeoutMs: number;
  /** Pause before polling again after a transient storage error. */
  retryDelayMs: number;
}

/**
 * cast, from its notifier: it has subscriptions again, poll again. Any
 * other message stops it.
 */
export type TypeMonitorMessage = { type: 'resume' };

interface TypeMonitorState {
  args: TypeMonitorArgs;
  core: JobsCore;
  since: Versionstamp | undefined;
  lastNotified: number;
  /** The notifier had no subscriptions when last told of a change: no poll until it resumes the monitor. */
  paused: boolean;
}

const POLL = 'poll';

export default defineActor<TypeMonitorMessage, TypeMonitorArgs, TypeMonitorState>(import.meta.url, {
  init(args, ctx) {
    // It does not trap exits: its long poll must not keep it alive after its
    // notifier's exit signal, which would keep the name from the successor.
    ctx.sendAfter(0, POLL);
    return { args, core: jobsCore(ctx), since: args.since, lastNotified: 0, paused: false };
  },
  handleCast(msg, state, ctx) {
    if (!hasType(msg, 'resume')) return refuseCast(msg, state, ctx);
    if (state.paused) {
      state.paused = false;
      ctx.sendAfter(0, POLL);
    }
    return state;
  },
  handleCall: refuseCall,
  async handleInfo(msg, state, ctx) {
    if (msg.type !== 'TIMEOUT' || msg.tag !== POLL) {
      ctx.stop(badMessage('bad_info', msg));
      return state;
    }
    await poll(state, ctx);
    return state;
  },
});

async function poll(state: TypeMonitorState, ctx: ActorContext<TypeMonitorMessage>): Promise<void> {
  const { type, holdoffMs, pollTimeoutMs, retryDelayMs, notifier } = state.args;
  let changed: { versionstamp: Versionstamp | undefined } | 'timeout';
  try {
    changed = await state.core.waitActivity(type, state.since, pollTimeoutMs);
  } catch (error) {
    if (!isTransient(error)) throw error;
    ctx.sendAfter(retryDelayMs, POLL);
    return;
  }
  if (changed !== 'timeout') {
    const sinceLast = Date.now() - state.lastNotified;
    if (sinceLast < holdoffMs) await new Promise((resolve) => setTimeout(resolve, holdoffMs - sinceLast));
    state.since = changed.versionstamp;
    state.lastNotified = Date.now();
    // A call, as in couch_jobs: the next wait starts once the notifier has
    // read what changed, so a burst of changes costs one read per holdoff.
    // It answers whether anyone is subscribed (see the top of this file).
    const subscribed = await ctx.call<boolean>(notifier, { type: 'type_updated', versionstamp: state.since }, Number.POSITIVE_INFINITY);
    if (subscribed === false) {
      state.paused = true;
      return;
    }
  }
  ctx.sendAfter(0, POLL);
}
