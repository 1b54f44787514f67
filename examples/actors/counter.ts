// A counter actor for the supervision demo: casts add, calls read. Its state
// lives only in the actor, so a restart starts again from its args.

import { defineActor } from '@jobtree/actors';

export type CounterMessage =
  | { type: 'add'; by: number }
  | { type: 'get' }
  /** Loop forever; first set slot 0 of `spinning` (a shared Int32 slot) to 1, to say so. */
  | { type: 'spin'; spinning: SharedArrayBuffer };

export default defineActor<CounterMessage, { start: number }, number>(import.meta.url, {
  init: (args) => args.start,
  handleCast(msg, total) {
    if (msg.type === 'add') return total + msg.by;
    if (msg.type === 'spin') {
      // A handler stuck in a synchronous loop: only terminating its thread stops it. It can send
      // no message (its thread never gets to post one), so it says it is looping through shared memory.
      Atomics.store(new Int32Array(msg.spinning), 0, 1);
      for (;;) {
        /* spin */
      }
    }
    return total;
  },
  handleCall(msg, total) {
    return { reply: msg.type === 'get' ? total : undefined };
  },
});
