// Counts the lmdb cursors an embedded store opens: every range read of its
// data goes through lmdb-js's `getRange` (`getKeys` too), which opens one.
// lmdb-js makes a class per environment, shared by its named stores, and
// lists the stores in a process-wide registry by the directory's base name.

import { basename } from 'node:path';
import * as lmdb from 'lmdb';

export interface CursorCount {
  /** Cursors opened since the count started. */
  opened: number;
}

/** Counts the cursors the store in `dir` opens from now until the test ends. */
export function countCursors(t: { teardown(fn: () => void): void }, dir: string): CursorCount {
  const registry = (lmdb as { allDbs?: Map<string, object> }).allDbs;
  const store = registry?.get(`${basename(dir)}-data`);
  if (store === undefined) throw new Error(`no lmdb store of ${dir} in lmdb-js's registry`);
  const prototype = Object.getPrototypeOf(store) as { getRange: (...args: unknown[]) => unknown };
  const getRange = prototype.getRange;
  const count: CursorCount = { opened: 0 };
  prototype.getRange = function (this: unknown, ...args: unknown[]) {
    count.opened += 1;
    return getRange.apply(this, args);
  };
  t.teardown(() => {
    prototype.getRange = getRange;
  });
  return count;
}
