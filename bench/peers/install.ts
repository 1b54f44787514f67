// Installs what the peer benchmark needs and the workspace does not: Debian's
// redis-server and PostgreSQL (through apt-get, as root), and the peers' npm
// packages into bench/peers/node_modules, outside every workspace package's
// dependencies. Each is skipped when already there.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PeerBenchError } from './errors.js';

export const PEERS_DIR = dirname(fileURLToPath(import.meta.url));
const NPM_PEERS = ['bullmq', 'ioredis', 'graphile-worker', 'pg'] as const;

export interface ServerBinaries {
  redisServer: string;
  /** The folder holding `initdb` and `postgres`. */
  postgresBin: string;
}

function findRedisServer(): string | undefined {
  return ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path));
}

/** Debian installs each major version under /usr/lib/postgresql/<major>/bin; take the newest. */
function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((entry) => existsSync(join(root, entry, 'bin', 'postgres')) && existsSync(join(root, entry, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

function run(command: string, args: string[], what: string): void {
  console.log(`  $ ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) {
    throw new PeerBenchError('install_failed', `${what} failed (${result.error?.message ?? `exit ${result.status}`})`);
  }
}

/** Installs Redis and PostgreSQL with apt-get unless present; returns where their binaries are. */
export function ensureServers(): ServerBinaries {
  const missing = [
    ...(findRedisServer() ? [] : ['redis-server']),
    ...(findPostgresBin() ? [] : ['postgresql']),
  ];
  if (missing.length > 0) {
    if (process.getuid?.() !== 0) {
      throw new PeerBenchError('install_failed', `missing ${missing.join(', ')}: run as root to let the benchmark apt-get install them, or install them yourself`);
    }
    console.log(`installing ${missing.join(', ')} (Debian packages)`);
    run('apt-get', ['update', '-qq'], 'apt-get update');
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], 'apt-get install');
    // Debian's packages start a system-wide server where an init system lets
    // them; the benchmark runs its own in a scratch folder, so it stops what
    // its own install started (nothing of the user's ran: it was not installed).
    for (const service of missing) {
      const script = `/etc/init.d/${service}`;
      if (existsSync(script)) spawnSync(script, ['stop'], { stdio: 'ignore' });
    }
  }
  const redisServer = findRedisServer();
  const postgresBin = findPostgresBin();
  if (!redisServer || !postgresBin) throw new PeerBenchError('install_failed', 'redis-server or PostgreSQL still missing after apt-get install');
  return { redisServer, postgresBin };
}

/** Installs the peers' npm packages into bench/peers/node_modules unless present. */
export function ensurePeerPackages(): void {
  const missing = NPM_PEERS.filter((name) => !existsSync(join(PEERS_DIR, 'node_modules', name, 'package.json')));
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(', ')} into bench/peers/node_modules (not a workspace dependency)`);
  run('npm', ['install', '--prefix', PEERS_DIR, '--no-audit', '--no-fund', '--loglevel=error'], 'npm install');
}
