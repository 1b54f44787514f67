// The schedule ticker: one periodic actor under jobs_sup (as Oban's cron
// plugin) that adds the jobs of the stored schedules' due ticks
// (schedule-ticks.ts). It wakes at the earliest next tick, at least every
// `pollMs` (a schedule another process set is found then), and at once when
// this app sets one. In a shared embedded store only the owner ticks (as its
// other periodic actors run once per store); on FoundationDB every node
// ticks, and the store's transactions keep each tick's job to one.

import { defineActor } from '@jobtree/actors';
import { badMessage, hasType, onExit, refuseCall } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import { type ClockSpec, clockFromSpec } from '../clock.js';
import { isTransient } from './retry-guard.js';
import { LATE_MS } from './schedule-ticks.js';

export interface ScheduleTickerArgs {
  /** The registered name of its supervisor, the one process whose exit signal it obeys. */
  supervisor: string;
  /** The app's clock: ticks are in its time. */
  clock?: ClockSpec;
  /** The longest it sleeps between two looks at the schedules (app clock ms). */
  pollMs: number;
}

export type ScheduleTickerMessage =
  /** cast: the schedules changed in this process; look now. */
  { type: 'check' };

interface ScheduleTickerState {
  args: ScheduleTickerArgs;
  core: JobsCore;
  /** Its supervisor, whose exit signal it obeys. */
  parent: string | undefined;
  /** Cancels the pending wake-up. */
  cancelWake: (() => void) | undefined;
}

const WAKE = 'tick';

/**
 * The least real time between the end of a pass and the next: a tick's job
 * comes at most this late, and a ticker behind its ticks leaves the process
 * the rest of its time. Under a clock so fast that a quarter of LATE_MS of
 * it passes sooner, the rest is that quarter: no tick waits on it long
 * enough to count as missed.
 */
export const PASS_GAP_MS = 100;

export default defineActor<ScheduleTickerMessage, ScheduleTickerArgs, ScheduleTickerState>(import.meta.url, {
  async init(args, ctx) {
    ctx.trapExit(true);
    const state: ScheduleTickerState = { args, core: jobsCore(ctx), parent: ctx.whereis(args.supervisor), cancelWake: undefined };
    state.cancelWake = ctx.sendAfter(0, WAKE);
    return state;
  },
  handleCall: refuseCall,
  async handleCast(msg, state, ctx) {
    if (!hasType(msg, 'check')) {
      ctx.stop(badMessage('bad_cast', msg));
      return state;
    }
    state.cancelWake?.();
    state.cancelWake = ctx.sendAfter(0, WAKE);
    return state;
  },
  async handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') {
      onExit(msg, [state.parent], ctx);
      return state;
    }
    if (msg.type === 'TIMEOUT' && msg.tag === WAKE) {
      const clock = clockFromSpec(state.args.clock);
      const now = clock.now();
      const started = performance.now();
      let nextAt: number | undefined;
      try {
        nextAt = await state.core.tickSchedules(now);
      } catch (error) {
        if (!isTransient(error)) throw error;
      }
      const wait = Math.max(0, Math.min(state.args.pollMs, nextAt === undefined ? state.args.pollMs : nextAt - now));
      // Behind (a backlog of missed ticks, a store slower than the ticks), the
      // next pass would be due at once: the ticker would hold the event loop
      // and the store with pass after pass. It rests at least as long as the
      // pass took, and PASS_GAP_MS; but never so long that a tick due meanwhile
      // would be late enough to count as missed (LATE_MS on the app's clock,
      // which a sped-up clock reaches in a few real ms).
      const rest = Math.min(Math.max(PASS_GAP_MS, performance.now() - started), clock.realMs(LATE_MS / 4));
      // One ms more: a timer may fire a hair early, before the tick it waits for.
      state.cancelWake = ctx.sendAfter(Math.max(rest, Math.ceil(clock.realMs(wait)) + 1), WAKE);
      return state;
    }
    ctx.stop(badMessage('bad_info', msg));
    return state;
  },
});
