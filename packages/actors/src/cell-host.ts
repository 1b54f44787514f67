// What an actor cell needs from the runtime of its thread, and what that
// runtime sees of a cell. ActorCell is written against these interfaces
// rather than against ActorHost, so the two modules do not import each other.

import type { CallOwner } from './call-table.js';
import type { Steppable } from './ready-loop.js';
import type {
  ActorDefinition,
  ActorId,
  ActorRef,
  ExitReason,
  MonitorRef,
  Remote,
  SpawnOptions,
} from './interfaces.js';

/** A cell as its host sees it. */
export interface HostedCell extends Steppable, CallOwner {
  readonly id: ActorId;
  name: string | undefined;
  /** spawn_monitor: the DOWN of a child that dies at once may come before the spawn's answer, so its monitor holds a place. */
  holdSpawnMonitor(ref: MonitorRef): void;
  /** The monitored spawn answered: the monitor now names the child. */
  spawnMonitorStarted(ref: MonitorRef, child: ActorId): void;
  /** The monitored child was killed before its spawn answered: DOWN `killed`. */
  spawnMonitorKilled(ref: MonitorRef): void;
}

/** The runtime of a cell's thread, as the cell uses it. */
export interface CellHost {
  /** The thread's status block (see host-status.ts): cells publish PROGRESS and RUNNING in it. */
  readonly status: Int32Array;
  /** Takes kills the main thread has flagged; cheap enough before any handler. */
  takeKills(): void;
  schedule(cell: HostedCell): void;
  send(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): void;
  /** The cell ended: it is no longer routed to, its calls are dropped. */
  forget(cell: HostedCell): void;
  actorExited(cell: HostedCell, reason: ExitReason): void;
  resolve(target: ActorRef | ActorId | string): ActorId | undefined;
  whereis(name: string): ActorId | undefined;
  newMonitorRef(): MonitorRef;
  cast(from: ActorId, to: ActorRef | string, msg: unknown): void;
  call(owner: CallOwner | undefined, from: ActorId, to: ActorRef | string, msg: unknown, timeoutMs?: number): Promise<unknown>;
  exit(from: ActorId, target: ActorRef | ActorId, reason: ExitReason | 'kill'): void;
  kill(target: ActorRef | ActorId | string): void;
  register(cell: HostedCell, name: string): void;
  spawn(spawner: HostedCell | undefined, definition: ActorDefinition<unknown, unknown>, args: unknown, options?: SpawnOptions): Promise<ActorRef>;
  core<T>(): Remote<T>;
}
