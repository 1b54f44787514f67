// The pruner: every interval of the app's clock, it removes the finished
// jobs of each type beyond the type's retention policy (retention-options.ts),
// one bounded prune transaction per message, so that its mailbox (a stop, a
// stats call) and the app's own work go between its batches. It runs in the
// process that owns the store: in a client of a shared store `typesToWatch`
// is empty, and the owner prunes for every process. A round left half done
// by a crash or a restart is simply done again: each batch removes only what
// is beyond the policy when it runs. Its batches are paced (prune-pace.ts):
// at most `maxRemovalsPerSecond` jobs a second.

import { type ActorContext, type ActorId, defineActor } from '@jobtree/actors';
import type { JobOutcome, PruneLimits } from '@jobtree/core';
import { type Clock, type ClockSpec, clockFromSpec } from '../clock.js';
import { badMessage, hasType, onExit, refuseCall, refuseCast } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import { policyOf, type RetentionSettings } from './retention-options.js';
import { pruneDelayMs } from './prune-pace.js';
import { isTransient } from './retry-guard.js';

export interface PrunerArgs {
  /** The registered name of its supervisor, the one process whose exit signal it obeys. */
  supervisor: string;
  retention: RetentionSettings;
  /** The app's clock: the interval is in its milliseconds, and ages are measured at its now. */
  clock?: ClockSpec;
}

/** What the pruner has done since it started. */
export interface PrunerStats {
  /** Finished rounds over every type. */
  rounds: number;
  /** Jobs removed, by outcome. */
  removed: Record<JobOutcome, number>;
  /** Prune transactions run. */
  batches: number;
  /** The most jobs one of them removed. */
  largestBatch: number;
}

export type PrunerMessage =
  /** call: replies its {@link PrunerStats}. */
  { type: 'stats' };

interface Work {
  type: string;
  outcome: JobOutcome;
  limits: PruneLimits;
}

interface PrunerState {
  args: PrunerArgs;
  core: JobsCore;
  clock: Clock;
  parent: ActorId | undefined;
  stats: PrunerStats;
  /** What the current round has left, or undefined between rounds. */
  work: Work[] | undefined;
}

const ROUND = 'prune_round';
const STEP = 'prune_step';

export default defineActor<PrunerMessage, PrunerArgs, PrunerState>(import.meta.url, {
  init(args, ctx) {
    ctx.trapExit(true);
    const state: PrunerState = {
      args,
      core: jobsCore(ctx),
      clock: clockFromSpec(args.clock),
      parent: ctx.whereis(args.supervisor),
      stats: { rounds: 0, removed: { succeeded: 0, failed: 0, cancelled: 0 }, batches: 0, largestBatch: 0 },
      work: undefined,
    };
    // A first round at once: a restarted pruner carries on where its store is.
    ctx.sendAfter(0, ROUND);
    return state;
  },
  handleCall(msg, state) {
    if (!hasType(msg, 'stats')) return refuseCall(msg);
    return { reply: snapshot(state.stats) };
  },
  handleCast: refuseCast,
  async handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') {
      onExit(msg, [state.parent], ctx);
      return state;
    }
    if (msg.type === 'TIMEOUT' && msg.tag === ROUND) {
      if (state.work === undefined) await startRound(state, ctx);
      return state;
    }
    if (msg.type === 'TIMEOUT' && msg.tag === STEP) {
      await step(state, ctx);
      return state;
    }
    ctx.stop(badMessage('bad_info', msg));
    return state;
  },
});

function snapshot(stats: PrunerStats): PrunerStats {
  return { ...stats, removed: { ...stats.removed } };
}

async function startRound(state: PrunerState, ctx: ActorContext<PrunerMessage>): Promise<void> {
  let types: string[];
  try {
    types = await state.core.typesToWatch();
  } catch (error) {
    if (!isTransient(error)) throw error;
    types = [];
  }
  const work: Work[] = [];
  for (const type of types) {
    const policy = policyOf(state.args.retention, type);
    for (const outcome of ['succeeded', 'failed', 'cancelled'] as const) {
      const limits = policy[outcome];
      if (limits !== undefined && (Number.isFinite(limits.maxAgeSeconds) || Number.isFinite(limits.maxCount))) {
        work.push({ type, outcome, limits });
      }
    }
  }
  state.work = work;
  ctx.sendAfter(0, STEP);
}

/** One prune transaction of the round's first piece of work; the next step, or the next round, is a message of its own. */
async function step(state: PrunerState, ctx: ActorContext<PrunerMessage>): Promise<void> {
  const work = state.work ?? [];
  const next = work[0];
  if (next === undefined) {
    endRound(state, ctx);
    return;
  }
  const started = performance.now();
  let handled = 0;
  try {
    const result = await state.core.pruneFinished(next.type, next.outcome, next.limits, {
      now: state.clock.now() / 1000,
      batchSize: state.args.retention.batchSize,
    });
    state.stats.batches += 1;
    state.stats.removed[next.outcome] += result.removed;
    state.stats.largestBatch = Math.max(state.stats.largestBatch, result.removed);
    handled = result.removed + result.indexed;
    if (!result.more) work.shift();
  } catch (error) {
    // A type removed since the round began, or a storage error worth a retry at the next round.
    if (!isTransient(error)) throw error;
    work.shift();
  }
  // Real time, not the app's clock: the pause is the writer's share left to the hot path.
  ctx.sendAfter(pruneDelayMs(handled, performance.now() - started, state.args.retention.maxRemovalsPerSecond), STEP);
}

function endRound(state: PrunerState, ctx: ActorContext<PrunerMessage>): void {
  state.work = undefined;
  state.stats.rounds += 1;
  ctx.sendAfter(Math.max(1, Math.round(state.clock.realMs(state.args.retention.intervalMs))), ROUND);
}
