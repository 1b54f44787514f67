// What an OS crash leaves of an embedded store: lmdb's last flushed
// transaction. Opened with `safeRestore` (not in lmdb-js's typings), lmdb
// takes that transaction even on the same boot, as it does after an OS
// restart (the later ones are only in the page cache), and writes it back
// as the store's current one.

import { open } from 'lmdb';
import type { RootDatabaseOptionsWithPath } from 'lmdb';

/** Rolls the closed store in `dir` back to its last flushed transaction. */
export async function rollBackToLastFlush(dir: string): Promise<void> {
  const options: RootDatabaseOptionsWithPath & { safeRestore: boolean } = { path: dir, noSubdir: false, safeRestore: true };
  const root = open(options);
  await root.close();
}
