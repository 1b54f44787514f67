// Holding lmdb's next asynchronous write, for tests of what happens while
// a commit is readable but not yet on disk.

import { LmdbStore } from '../../packages/core/src/storage/embedded/lmdb-store.js';
import { deferred } from '../deferred.js';

/**
 * Holds the `committed` and `flushed` promises of lmdb's next asynchronous
 * write until `release()`; its notice that it is visible is left alone (it
 * races the write's own promise, as in the engine, so it never waits for
 * the hold). The store's `write` is restored when the test ends.
 */
export function holdNextWrite(t: { teardown(fn: () => void): void }): { release(): void } {
  const gate = deferred<undefined>();
  const write = LmdbStore.prototype.write;
  t.teardown(() => {
    LmdbStore.prototype.write = write;
  });
  let held = false;
  LmdbStore.prototype.write = function (this: LmdbStore, version, fill) {
    const pending = write.call(this, version, fill);
    if (held) return pending;
    held = true;
    const hold = async <T>(value: T): Promise<T> => {
      await gate.promise;
      return value;
    };
    if (pending.visible !== undefined) pending.visible = Promise.race([pending.visible, pending.committed.then(() => {})]);
    pending.committed = pending.committed.then(hold);
    pending.flushed = pending.flushed.then(hold);
    return pending;
  };
  return { release: () => gate.resolve(undefined) };
}
