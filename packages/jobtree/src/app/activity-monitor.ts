// Re-creates couch_jobs_activity_monitor: one per job type, it re-enqueues
// running jobs whose worker went silent for a whole type timeout.
//
// The check is the versionstamp one of couch_jobs: at each check the monitor
// records the type's activity stamp; a running job whose activity row is
// older than a stamp recorded at least one full timeout ago had no accept and
// no update for that long, and goes back to the queue (its worker gets `halt`).
// couch_jobs checks once per timeout, so a silent job waits up to two
// timeouts and more; checking every quarter timeout against the stamp of a
// full timeout ago bounds the wait to 1.75 timeouts, for a few more reads.

import { type ActorContext, type ActorId, defineActor } from '@jobtree/actors';
import type { Versionstamp } from '@jobtree/core';
import { badMessage, onExit, refuseCall, refuseCast } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import { type Clock, type ClockSpec, clockFromSpec } from '../clock.js';
import { isTransient } from './retry-guard.js';

export interface ActivityMonitorArgs {
  type: string;
  /** The registered name of its supervisor, the one process whose exit signal it obeys. */
  supervisor: string;
  /** Upper bound of the random delay added to each check (never more than an eighth of the timeout). */
  maxJitterMs: number;
  /** How often a type without a timeout is looked at again. */
  missingTimeoutCheckMs: number;
  /** The app's clock (real time unless a test speeds it up). */
  clock?: ClockSpec;
}

/** The activity monitor takes no messages: anything sent to it stops it. */
export type ActivityMonitorMessage = never;

interface Stamp {
  at: number;
  versionstamp: Versionstamp | undefined;
}

interface ActivityMonitorState {
  args: ActivityMonitorArgs;
  core: JobsCore;
  clock: Clock;
  parent: ActorId | undefined;
  /** The type timeout in ms as of the last check; 0 when the type has none. */
  timeoutMs: number;
  /** Stamps recorded at past checks, oldest first, covering about one timeout. */
  stamps: Stamp[];
}

const CHECK = 'check_activity';

export default defineActor<ActivityMonitorMessage, ActivityMonitorArgs, ActivityMonitorState>(import.meta.url, {
  async init(args, ctx) {
    ctx.trapExit(true);
    const parent = ctx.whereis(args.supervisor);
    const state: ActivityMonitorState = { args, core: jobsCore(ctx), clock: clockFromSpec(args.clock), parent, timeoutMs: 0, stamps: [] };
    await schedule(state, ctx);
    return state;
  },
  handleCast: refuseCast,
  handleCall: refuseCall,
  async handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') {
      onExit(msg, [state.parent], ctx);
      return state;
    }
    if (msg.type !== 'TIMEOUT' || msg.tag !== CHECK) {
      ctx.stop(badMessage('bad_info', msg));
      return state;
    }
    try {
      await checkActivity(state);
    } catch (error) {
      if (!isTransient(error)) throw error;
    }
    await schedule(state, ctx);
    return state;
  },
});

async function checkActivity(state: ActivityMonitorState): Promise<void> {
  if (state.timeoutMs === 0) return;
  const now = state.clock.now();
  const versionstamp = await state.core.getActivityVersionstamp(state.args.type);
  // The newest stamp recorded at least one full timeout ago.
  let due: Stamp | undefined;
  while (state.stamps.length > 0 && now - state.stamps[0]!.at >= state.timeoutMs) {
    due = state.stamps.shift();
  }
  if (due !== undefined) {
    // Keep it: it still bounds the next checks until a newer one is due.
    state.stamps.unshift(due);
    if (due.versionstamp !== undefined) await state.core.reEnqueueInactive(state.args.type, due.versionstamp);
  }
  state.stamps.push({ at: now, versionstamp });
}

async function schedule(state: ActivityMonitorState, ctx: ActorContext<ActivityMonitorMessage>): Promise<void> {
  let timeoutMs = state.timeoutMs;
  try {
    const seconds = await state.core.getTypeTimeout(state.args.type);
    timeoutMs = seconds === undefined ? 0 : seconds * 1000;
  } catch (error) {
    if (!isTransient(error)) throw error;
  }
  if (timeoutMs !== state.timeoutMs) {
    // A changed timeout makes the recorded stamps meaningless (couch_jobs resets its stamp too).
    state.timeoutMs = timeoutMs;
    state.stamps = [];
  }
  const base = timeoutMs === 0 ? state.args.missingTimeoutCheckMs : timeoutMs / 4;
  const jitter = Math.random() * Math.min(state.args.maxJitterMs, timeoutMs / 8);
  ctx.sendAfter(Math.max(1, Math.round(state.clock.realMs(base + jitter))), CHECK);
}
