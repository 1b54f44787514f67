// Finding the notifier of a job type for a subscription. When there is none
// (or only the dead one a subscription had), the jobs server is asked to
// check the types, which starts it; when the server cannot answer, or the
// tree is still replacing a killed notifier, the lookup waits for the next
// start or exit of the notifier or the server, up to a deadline.

import { type ActorId, ActorError, type ActorSystem } from '@jobtree/actors';
import { SYSTEM_NAMES } from './jobs-tree.js';
import { watchNames } from './name-change.js';

export interface NotifierLookupOptions {
  actors: ActorSystem;
  /** Asks the jobs server to check the types now; resolves with the types it watches. */
  checkTypes(): Promise<string[]>;
  /** Whether the type has a timeout, so a notifier. */
  hasTimeout(type: string): Promise<boolean>;
  /** Throws when the app is closed or stopped. */
  checkOpen(): void;
  /** Aborted when the app closes or stops: a lookup waiting then looks again, and throws. */
  ended: AbortSignal;
  /** How long a lookup waits for a notifier before it gives up with `undefined`. */
  timeoutMs: number;
}

/**
 * The notifier of `type` other than `previous`; `undefined` when the type
 * has no timeout, or when none came before the deadline.
 */
export async function findNotifier(options: NotifierLookupOptions, type: string, previous?: ActorId): Promise<ActorId | undefined> {
  const { actors } = options;
  const name = `notifier:${type}`;
  const found = (id: ActorId | undefined): id is ActorId => id !== undefined && id !== previous;
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    const change = watchNames(actors.events, [name, SYSTEM_NAMES.server], deadline, options.ended);
    try {
      const now = actors.whereis(name);
      if (found(now)) return now;
      options.checkOpen();
      // jobs_server may be restarting (with a killed sibling): the watch wakes when it is back.
      try {
        if (actors.whereis(SYSTEM_NAMES.server) !== undefined) {
          const watched = await options.checkTypes();
          const after = actors.whereis(name);
          if (found(after)) return after;
          if (after === undefined && !(await options.hasTimeout(type))) return undefined;
          // The server read the types before this one had a timeout: it starts its notifier when asked again.
          if (after === undefined && !watched.includes(type) && performance.now() <= deadline) continue;
        }
      } catch (error) {
        if (!(error instanceof ActorError)) throw error;
      }
      if (performance.now() > deadline) return undefined;
      await change.changed;
    } finally {
      change.stop();
    }
  }
}
