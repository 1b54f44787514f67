// One watch over two keys, for a wait that either change may end: it fires
// (or fails) with the first of them to, and lets both go either way (a watch
// left armed would hold its registration until its key changes, maybe never).

import type { Watch } from '../storage/interfaces.js';

/** A watch that fires with the first of `first` and `second`; cancelling it cancels both. */
export function eitherWatch(first: Watch, second: Watch): Watch {
  const cancel = (): void => {
    first.cancel();
    second.cancel();
  };
  // On FoundationDB one key's watch may fail alone (too_many_watches, 1032)
  // while the other stays armed.
  const promise = Promise.race([first.promise, second.promise]).then(
    (fired) => {
      cancel();
      return fired;
    },
    (error: unknown) => {
      cancel();
      throw error;
    },
  );
  // As each watch's own promise: a watch of an attempt that did not commit
  // rejects, and is usually dropped unobserved (the attempt ran again); its
  // rejection must not end the process as an unhandled one.
  promise.catch(() => {});
  return { promise, cancel };
}
