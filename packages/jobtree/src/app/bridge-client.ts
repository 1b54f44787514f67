// The actor side of the jobs bridge: `jobsCore(ctx)` gives an actor the
// core's facade with errors rebuilt as the classes they were thrown as, so
// `error instanceof JobsError && error.code === 'halt'` works in an actor as
// it does on the main thread.
//
// The error classes come from the core's errors entry, not its main one: the
// actors that use this file run on host threads, which reach the store
// through the bridge and must not load it (lmdb and its buffers, per thread).

import type { ActorContext } from '@jobtree/actors';
import { FdbError, JobsError, type JobsErrorCode } from '@jobtree/core/errors';
import type { JobsBridge } from './jobs-bridge.js';

type AsyncMethods<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => Promise<unknown> ? K : never]: T[K];
};

/** The bridge as an actor sees it: every method of {@link JobsBridge} that returns a promise. */
export type JobsCore = AsyncMethods<JobsBridge>;

/** Rebuilds a core error that crossed the bridge as its own class, keeping its message. */
export function rebuildCoreError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const fields = error as Error & { code?: unknown };
  let rebuilt: Error | undefined;
  if (error.name === 'JobsError' && typeof fields.code === 'string' && !(error instanceof JobsError)) {
    rebuilt = new JobsError(fields.code as JobsErrorCode, '');
  } else if (error.name === 'FdbError' && typeof fields.code === 'number' && !(error instanceof FdbError)) {
    rebuilt = new FdbError(fields.code);
  }
  if (rebuilt === undefined) return error;
  Object.defineProperty(rebuilt, 'message', { value: error.message, configurable: true, writable: true });
  if (error.stack !== undefined) rebuilt.stack = error.stack;
  return rebuilt;
}

const clients = new WeakMap<object, JobsCore>();

/** The jobs core as seen from an actor (one client per bridge endpoint). */
export function jobsCore(ctx: ActorContext<never> | ActorContext<unknown>): JobsCore {
  const remote = (ctx as ActorContext<unknown>).core<JobsBridge>() as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const cached = clients.get(remote);
  if (cached !== undefined) return cached;
  const client = new Proxy({} as JobsCore, {
    get(_target, method) {
      if (typeof method !== 'string' || method === 'then') return undefined;
      return async (...args: unknown[]) => {
        try {
          return await remote[method]!(...args);
        } catch (error) {
          throw rebuildCoreError(error);
        }
      };
    },
  });
  clients.set(remote, client);
  return client;
}
