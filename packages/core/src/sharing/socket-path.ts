// Where the owner of an embedded store listens for the other processes, and
// who may connect. The socket lives in a directory only the owner's user can
// enter (0700) and is itself 0600, so a process of another user cannot
// connect: the kernel's permission checks are the access control, as for
// the data files themselves.
//
// A Unix socket path is limited to 107 bytes on Linux. When the data
// directory's path leaves no room, the socket goes to a per-user directory
// under XDG_RUNTIME_DIR (or the temporary directory), named by a hash of the
// data directory's real path: every process of the store computes the same
// place from the same directory.

import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, realpathSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobsError } from '../errors.js';

/** The longest socket path the kernel takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;
const RUN_DIRECTORY = 'run';
const SOCKET_FILE = 'owner.sock';

export interface StoreSocket {
  /** The directory the socket is in (0700, the store owner's user's). */
  directory: string;
  /** The socket's path. */
  path: string;
}

/** The socket of the store in `dataDirectory` (which must exist). */
export function storeSocket(dataDirectory: string): StoreSocket {
  const real = realpathSync(dataDirectory);
  const inData = join(real, RUN_DIRECTORY);
  if (Buffer.byteLength(join(inData, SOCKET_FILE)) <= MAX_SOCKET_PATH) return { directory: inData, path: join(inData, SOCKET_FILE) };
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const base = process.env.XDG_RUNTIME_DIR !== undefined && process.env.XDG_RUNTIME_DIR !== '' ? process.env.XDG_RUNTIME_DIR : tmpdir();
  const directory = join(base, `jobtree-${uid}`);
  const name = `${createHash('sha256').update(real).digest('hex').slice(0, 24)}.sock`;
  return { directory, path: join(directory, name) };
}

/**
 * The owner's side: makes the socket's directory (0700), checks that it
 * belongs to this process's user and admits nobody else, and removes a
 * socket file left by a previous owner (this process holds the directory's
 * lock, so any socket there is stale).
 */
export function prepareSocket(socket: StoreSocket): void {
  try {
    mkdirSync(socket.directory, { recursive: true, mode: 0o700 });
    chmodSync(socket.directory, 0o700);
  } catch (error) {
    throw accessError(socket, `its directory cannot be made private (${errnoOf(error)})`, error);
  }
  checkPrivate(socket);
  try {
    unlinkSync(socket.path);
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw accessError(socket, `a stale socket cannot be removed (${errnoOf(error)})`, error);
  }
}

/**
 * Both sides: the socket's directory must belong to this process's user and
 * admit nobody else; otherwise another user could stand in for the owner
 * (or listen in), and the store is refused with `access_denied`.
 */
export function checkPrivate(socket: StoreSocket): void {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(socket.directory);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return; // no owner has listened yet: nothing to trust or distrust
    throw accessError(socket, `its directory cannot be checked (${errnoOf(error)})`, error);
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : stat.uid;
  if (!stat.isDirectory()) throw accessError(socket, `${socket.directory} is not a directory`);
  if (stat.uid !== uid) throw accessError(socket, `${socket.directory} belongs to user ${stat.uid}, not to this process's user ${uid}`);
  if ((stat.mode & 0o077) !== 0) {
    throw accessError(socket, `${socket.directory} admits other users (mode ${(stat.mode & 0o777).toString(8)}); it must be 0700`);
  }
}

function accessError(socket: StoreSocket, reason: string, cause?: unknown): JobsError {
  return new JobsError('access_denied', `the store's socket ${socket.path} cannot be trusted: ${reason}`, { cause });
}

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? String(error);
}
