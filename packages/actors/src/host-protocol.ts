// What the main thread and a host thread tell each other besides actor
// messages: what a host thread starts with, spawn orders and requests and
// their answers, and the main thread's part in operations that need a
// system-wide view.

import type { MessagePort } from 'node:worker_threads';
import type { ActorErrorCode } from './errors.js';
import type { ActorDefinition, ActorId, ExitReason, MonitorRef, Placement, ThreadId } from './interfaces.js';

/** What an actor asks for when it spawns; crosses threads (no functions) unless `definition` is set on the main thread. */
export interface SpawnRequest {
  module: string;
  exportName: string;
  /** Only on the main thread, for `placement: 'main'`: the definition by reference. */
  definition?: ActorDefinition<unknown, unknown>;
  args: unknown;
  placement: Placement;
  name: string | undefined;
  /** spawn_link: the spawner. */
  linkTo: ActorId | undefined;
  /** spawn_monitor: the spawner and its monitor ref. */
  monitor: { ref: MonitorRef; by: ActorId } | undefined;
}

/** What the thread that hosts the new actor is told. */
export type SpawnOrder = Omit<SpawnRequest, 'definition' | 'placement'>;

/** The main thread's part in operations that need a system-wide view. */
export interface Coordinator {
  requestSpawn(request: SpawnRequest): Promise<ActorId>;
  /** Kill an actor on another thread (the main thread watches for a stuck host). */
  requestKill(id: ActorId): void;
  /** A local actor took `name` (already in this thread's table). */
  registerName(id: ActorId, name: string): void;
  actorExited(id: ActorId, name: string | undefined, reason: ExitReason): void;
}

/** What the main thread hands a new host thread. */
export interface HostThreadData {
  thread: ThreadId;
  /**
   * Its link to the main thread: a MessagePort of its own rather than
   * parentPort, so that the main thread can take what this thread already
   * sent it out of turn (receiveMessageOnPort) when it declares an actor dead.
   */
  main: MessagePort;
  /** Kills from the main thread, apart from everything else (see kill-port.ts). */
  kills: MessagePort;
  /** The status block the main thread's kill watchdog reads (see host-status.ts). */
  status: SharedArrayBuffer;
  peers: { thread: ThreadId; port: MessagePort }[];
  names: [string, ActorId][];
  core: MessagePort | undefined;
  shutdownTimeoutMs: number;
}

/** The main thread's answer to a spawn request. */
export type SpawnOutcome = { id: ActorId } | { code: ActorErrorCode; message: string; reason: ExitReason | undefined };
