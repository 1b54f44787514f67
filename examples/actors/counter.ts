// A counter actor for the supervision demo: casts add, calls read. Its state
// lives only in the actor, so a restart starts again from its args.

import { defineActor } from '@jobtree/actors';

export type CounterMessage = { type: 'add'; by: number } | { type: 'get' } | { type: 'spin' };

export default defineActor<CounterMessage, { start: number }, number>(import.meta.url, {
  init: (args) => args.start,
  handleCast(msg, total) {
    if (msg.type === 'add') return total + msg.by;
    if (msg.type === 'spin') {
      // A handler stuck in a synchronous loop: only terminating its thread stops it.
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
