// A job-processing actor: it accepts `email` jobs through the jobs bridge,
// reports progress with `update` (its heartbeat), and finishes them. When a
// job is taken from it (removed, or re-enqueued after it went silent) its
// next update or finish fails with `halt`, and it drops the job. Started
// under the app's `user_sup`, so it is restarted if it crashes.
//
// `silent: true` makes a worker that accepts one job and then never reports
// again, as a hung process would: the type's activity monitor re-enqueues
// that job after a whole type timeout.

import { type ActorContext, defineActor } from '@jobtree/actors';
import { type Job, JobsError } from '@jobtree/core';
import { jobsCore } from 'jobtree';

export interface EmailWorkerArgs {
  type: string;
  /** Milliseconds of "work" per job, in a few steps each followed by an update. */
  workMs: number;
  silent?: boolean;
}

/** call: how many jobs this worker finished. */
export type EmailWorkerMessage = { type: 'finished_count' };

interface EmailWorkerState {
  args: EmailWorkerArgs;
  finished: number;
}

const WORK = 'work';

export default defineActor<EmailWorkerMessage, EmailWorkerArgs, EmailWorkerState>(import.meta.url, {
  init(args, ctx) {
    ctx.sendAfter(0, WORK);
    return { args, finished: 0 };
  },
  handleCall(_msg, state) {
    return { reply: state.finished };
  },
  async handleInfo(msg, state, ctx) {
    if (msg.type !== 'TIMEOUT' || msg.tag !== WORK) return state;
    await workOnce(state, ctx);
    return state;
  },
});

async function workOnce(state: EmailWorkerState, ctx: ActorContext<EmailWorkerMessage>): Promise<void> {
  const core = jobsCore(ctx);
  // `owner`: should this actor be killed while it waits, the wait ends and no job is left with it.
  const job = await core.accept(state.args.type, { timeout: 1_000, owner: ctx.self.id });
  if (job === undefined) {
    ctx.sendAfter(0, WORK);
    return;
  }
  if (state.args.silent) return; // never updates, never finishes, never asks for work again
  let current: Job = job;
  try {
    for (let step = 1; step <= 3; step++) {
      await new Promise((resolve) => setTimeout(resolve, state.args.workMs / 3));
      current = await core.update(current, { ...(job.data as object), progress: step / 3 });
    }
    await core.finish(current, { sent: true, by: ctx.self.id });
    state.finished += 1;
  } catch (error) {
    if (!(error instanceof JobsError && error.code === 'halt')) throw error;
  }
  ctx.sendAfter(0, WORK);
}
