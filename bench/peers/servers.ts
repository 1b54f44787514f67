// Starts the peers' servers in a scratch folder, bound to 127.0.0.1 on free
// ports, with the durability each is measured at: Redis with its append-only
// file synced once a second (appendfsync everysec, BullMQ's usual setup),
// Postgres with fsync and synchronous commit on (its default: a commit
// returns once its WAL is flushed). Each server is registered with the
// teardown as soon as it is spawned.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { PeerBenchError } from './errors.js';
import type { ServerBinaries } from './install.js';
import { loadPg } from './peer-modules.js';
import type { Teardown } from './teardown.js';

export interface RunningServer {
  pid: number;
  port: number;
}

export interface RedisServer extends RunningServer {
  connection: { host: '127.0.0.1'; port: number; maxRetriesPerRequest: null };
}

export interface PostgresServer extends RunningServer {
  connectionString: string;
}

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

/** A port nothing listens on right now (the OS picks it; the server binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new PeerBenchError('server_failed', 'no free port');
  return address.port;
}

/** Spawns a server in its own process group and registers stopping it: `signal`, then SIGKILL after a grace period. */
function spawnServer(
  teardown: Teardown,
  name: string,
  command: string,
  args: string[],
  signal: NodeJS.Signals,
  user?: { uid: number; gid: number },
): ChildProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...(user ?? {}) });
  const log: string[] = [];
  const keep = (chunk: Buffer) => {
    log.push(chunk.toString());
    if (log.length > 50) log.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let stopping = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, exitSignal) => {
    if (!stopping) console.error(`${name} exited unexpectedly (${exitSignal ?? `code ${code}`}):\n${log.join('').slice(-2000)}`);
  });
  teardown.add(
    name,
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopping = true;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
      console.log(`  stopped ${name}`);
    },
    () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  );
  return child;
}

async function waitUntil(what: string, child: ChildProcess, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new PeerBenchError('server_failed', `${what} exited while starting`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new PeerBenchError('server_failed', `${what} did not accept connections within ${START_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startRedis(teardown: Teardown, binaries: ServerBinaries, scratch: string): Promise<RedisServer> {
  const dir = join(scratch, 'redis');
  mkdirSync(dir);
  const port = await freePort();
  const child = spawnServer(teardown, 'redis-server', binaries.redisServer, [
    '--bind', HOST, '--port', String(port), '--dir', dir,
    '--appendonly', 'yes', '--appendfsync', 'everysec',
    '--save', '', // no RDB snapshots: the AOF is the durability under test
    '--protected-mode', 'yes', '--daemonize', 'no', '--maxmemory-policy', 'noeviction',
  ], 'SIGTERM');
  const connection = { host: HOST, port, maxRetriesPerRequest: null } as const;
  await waitUntil('redis-server', child, () => redisAnswersPing(port));
  return { pid: child.pid ?? 0, port, connection };
}

/** One PING over a plain socket: a client library would retry on its own and hide a server that is not up. */
function redisAnswersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, HOST);
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk) => done(chunk.toString().startsWith('+PONG')));
  });
}

/** Postgres refuses to run as root: then initdb and the server run as the `postgres` user Debian's package creates. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid === 0) throw new PeerBenchError('server_failed', 'running as root, and there is no `postgres` user to run PostgreSQL as');
  return { uid, gid };
}

export async function startPostgres(teardown: Teardown, binaries: ServerBinaries, scratch: string): Promise<PostgresServer> {
  const user = postgresUser();
  const data = join(scratch, 'postgres');
  const sockets = join(scratch, 'postgres-sockets');
  for (const dir of [data, sockets]) {
    mkdirSync(dir, { mode: 0o700 });
    if (user) chownSync(dir, user.uid, user.gid);
  }
  const initdb = spawnSync(
    join(binaries.postgresBin, 'initdb'),
    ['-D', data, '-U', 'bench', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions'],
    { encoding: 'utf8', ...(user ?? {}) },
  );
  if (initdb.status !== 0) throw new PeerBenchError('server_failed', `initdb failed: ${initdb.stderr || initdb.error?.message}`);
  const port = await freePort();
  const child = spawnServer(teardown, 'postgres', join(binaries.postgresBin, 'postgres'), [
    '-D', data, '-p', String(port),
    '-c', `listen_addresses=${HOST}`, '-c', `unix_socket_directories=${sockets}`,
    '-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on',
    '-c', 'max_connections=200',
  ], 'SIGINT', user); // SIGINT: Postgres' fast shutdown (roll back sessions, checkpoint, exit)
  const connectionString = `postgres://bench@${HOST}:${port}/postgres`;
  const { Client } = await loadPg();
  await waitUntil('postgres', child, async () => {
    const client = new Client({ connectionString });
    await client.connect();
    await client.end();
    return true;
  });
  return { pid: child.pid ?? 0, port, connectionString };
}
