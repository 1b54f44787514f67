// The place of a job type's scheduler in the tree: `processor:<type>`, a
// child of `user_sup` on the main thread. Its start runs the scheduler (the
// re-creation of couch_replicator_scheduler with its piscina handlers); a
// clean stop stops it with its grace period (handlers signalled, running jobs
// resubmitted). A kill skips that: the app then stops the orphaned scheduler
// at once (its jobs go back to the queue) and the supervisor starts a new one.

import { type ExitReason, defineActor } from '@jobtree/actors';
import type { Scheduler } from '../processors/index.js';
import { badMessage, onExit, refuseCall, refuseCast } from './bad-message.js';

export interface ProcessorServerArgs {
  /** Starts the scheduler and records it as the type's current one, held by actor `self`. */
  start(self: string): Promise<Scheduler>;
  /** Stops it: graceful on a clean stop, at once when its supervisor was killed. */
  stop(scheduler: Scheduler, reason: ExitReason): Promise<void>;
  /** The registered name of its supervisor, whose exit signal it obeys. */
  supervisor: string;
}

/** The processor takes no messages: anything sent to it stops it. */
export type ProcessorServerMessage = never;

interface ProcessorServerState {
  args: ProcessorServerArgs;
  scheduler: Scheduler;
  parent: string | undefined;
}

export default defineActor<ProcessorServerMessage, ProcessorServerArgs, ProcessorServerState>(import.meta.url, {
  async init(args, ctx) {
    ctx.trapExit(true);
    return { args, scheduler: await args.start(ctx.self.id), parent: ctx.whereis(args.supervisor) };
  },
  handleCast: refuseCast,
  handleCall: refuseCall,
  handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') onExit(msg, [state.parent], ctx);
    else ctx.stop(badMessage('bad_info', msg));
    return state;
  },
  async terminate(reason, state) {
    await state.args.stop(state.scheduler, reason);
  },
});
