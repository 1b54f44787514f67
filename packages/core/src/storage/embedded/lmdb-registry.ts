// lmdb-js records every store it opens in a process-wide registry, keyed by
// the directory's base name (plus `-<name>` for a named store), and never
// removes one, not even on close: every database opened and closed in one
// process (an app started per test, a service that restarts its app) would
// stay reachable, with its buffers and whatever its listeners hold (the
// engine's whole store state). The registry is exported at
// runtime but absent from lmdb-js's types.

import * as lmdb from 'lmdb';

const exported: unknown = (lmdb as { allDbs?: unknown }).allDbs;
/** Undefined should a later lmdb-js drop the export: then there is nothing to clean. */
const registry: Map<string, unknown> | undefined = exported instanceof Map ? exported : undefined;

/**
 * Removes closed `stores` from lmdb-js's registry. An entry is removed only
 * while it still holds one of them: a store of another directory with the
 * same base name, opened later, replaced it under the same key and stays.
 */
export function forgetClosedStores(stores: readonly unknown[]): void {
  if (registry === undefined) return;
  for (const [key, store] of registry) {
    if (stores.includes(store)) registry.delete(key);
  }
}
