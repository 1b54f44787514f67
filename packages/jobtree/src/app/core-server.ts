// The `core` child of the jobs tree: it owns the core's handle on the
// database and serves it to every thread as the actor system's core (the
// bridge). Killing it and its restart give every thread a new bridge, on a
// fresh `Jobs` handle re-attached to the same database; calls made in the
// gap wait for the new one. A couch_jobs node has no such process (every
// process opens its own FoundationDB transactions); here one thread owns
// the storage, so it is a supervised child like any other.

import { defineActor } from '@jobtree/actors';
import { badMessage, refuseCall, refuseCast } from './bad-message.js';
import type { JobsBridge } from './jobs-bridge.js';

export interface CoreServerArgs {
  /** Makes a new bridge and publishes it (setCore). */
  attach(): JobsBridge;
  /** Withdraws the bridge on a clean stop: blocked calls end with `closed`. */
  detach(bridge: JobsBridge): Promise<void>;
}

/** The core server takes no messages: anything sent to it stops it. */
export type CoreServerMessage = never;

interface CoreServerState {
  args: CoreServerArgs;
  bridge: JobsBridge;
}

export default defineActor<CoreServerMessage, CoreServerArgs, CoreServerState>(import.meta.url, {
  init(args) {
    return { args, bridge: args.attach() };
  },
  handleCast: refuseCast,
  handleCall: refuseCall,
  handleInfo(msg, state, ctx) {
    ctx.stop(badMessage('bad_info', msg));
    return state;
  },
  async terminate(_reason, state) {
    await state.args.detach(state.bridge);
  },
});
