// Every system the peer benchmark can compare, by key (what `--only`
// names), and how to open one given the servers and the scratch folder: the
// benchmark's own process opens them all (the shared mode), a system
// process opens one (each system in its own process, as users run them).

import type { BenchSystem } from '../bench-system.js';
import { loadBullMq, loadGraphile, loadIoRedis, loadPg } from '../peer-modules.js';
import type { PostgresServer, RedisServer } from '../servers.js';
import { AppProcessSystem } from './app-process.js';
import { BullMqSystem } from './bullmq.js';
import { GraphileSystem } from './graphile.js';
import { hasBatchCalls, JobtreeSystem } from './jobtree.js';
import type { RetentionSetting } from './retention-setting.js';

/** The systems in the order of the table's columns: jobtree's first, then the peers. */
export const SYSTEM_KEYS = [
  'local-queue',
  'app.process',
  'app.process-threads',
  'bullmq',
  'bullmq-sandboxed',
  'graphile',
  'graphile-batched',
  'jobtree-single',
] as const;
export type SystemKey = (typeof SYSTEM_KEYS)[number];

/** Run unless `--only` names them: one job per call is not what anyone drains a backlog with, and it doubles a run. */
export const OPT_IN_KEYS: readonly SystemKey[] = ['jobtree-single'];

/** Column headers, by key (the systems say the same of themselves). */
export const SYSTEM_LABELS: Readonly<Record<SystemKey, string>> = {
  'local-queue': 'LocalQueue',
  'app.process': 'app.process',
  'app.process-threads': 'app.process threads',
  bullmq: 'BullMQ',
  'bullmq-sandboxed': 'BullMQ sandboxed',
  graphile: 'graphile',
  'graphile-batched': 'graphile batched',
  'jobtree-single': 'jobtree single calls',
};

export const isSystemKey = (key: string): key is SystemKey => (SYSTEM_KEYS as readonly string[]).includes(key);

/** jobtree's own systems; the others are its peers. */
export const isJobtreeKey = (key: SystemKey): boolean => key === 'local-queue' || key === 'jobtree-single' || key.startsWith('app.process');

/** The servers are started only when a peer runs: jobtree's variants alone need neither. */
export interface SystemEnvironment {
  scratch: string;
  redis?: RedisServer;
  postgres?: PostgresServer;
}

function server<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new TypeError(`no ${what} was started for this run`);
  return value;
}

/** Opens one system; close it with its `close()`. `retention` (jobtree's variants, under `--retention`): see retention-setting.ts. */
export async function openSystem(key: SystemKey, env: SystemEnvironment, retention?: RetentionSetting): Promise<BenchSystem> {
  switch (key) {
    case 'local-queue':
      if (!hasBatchCalls()) throw new TypeError('this build of @jobtree/core has no addMany/acceptMany/finishMany: no LocalQueue');
      return new JobtreeSystem(env.scratch, 'batched', retention);
    case 'jobtree-single':
      return new JobtreeSystem(env.scratch, 'single calls', retention);
    case 'app.process':
      return AppProcessSystem.open(env.scratch, 'main thread', retention);
    case 'app.process-threads':
      return AppProcessSystem.open(env.scratch, 'threads', retention);
    case 'bullmq':
    case 'bullmq-sandboxed': {
      const [bull, ioredis] = await Promise.all([loadBullMq(), loadIoRedis()]);
      return new BullMqSystem(server(env.redis, 'Redis'), bull, ioredis, key === 'bullmq' ? 'worker' : 'sandboxed');
    }
    case 'graphile':
    case 'graphile-batched': {
      const [graphile, pg] = await Promise.all([loadGraphile(), loadPg()]);
      return GraphileSystem.open(server(env.postgres, 'Postgres'), graphile, pg, key === 'graphile' ? 'as it comes' : 'local queue');
    }
  }
}
