// Counts the hand-offs of lmdb-js transactions to its writer thread
// (`startWriting` on the store's native environment): for tests that pin
// when, and how often, a write crosses to that thread.

import { basename } from 'node:path';
import * as lmdb from 'lmdb';

interface WritingEnv {
  startWriting(...args: unknown[]): unknown;
}

/**
 * Counts from now on the writer-thread starts of the lmdb store open in
 * `dir` (lmdb-js keeps its open stores by directory name, in a registry it
 * exports at runtime but not in its types).
 */
export function countWriterStarts(dir: string): { readonly count: number } {
  const registry = (lmdb as unknown as { allDbs?: Map<string, { env: WritingEnv }> }).allDbs;
  const root = registry?.get(basename(dir));
  if (root === undefined) throw new Error(`no lmdb store is open in ${dir}`);
  const { env } = root;
  const startWriting = env.startWriting;
  const counter = { count: 0 };
  Object.defineProperty(env, 'startWriting', {
    configurable: true,
    value(this: WritingEnv, ...args: unknown[]): unknown {
      counter.count += 1;
      return startWriting.apply(this, args);
    },
  });
  return counter;
}
