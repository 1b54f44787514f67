// What travels between threads. In a thread an envelope is a plain object of
// fixed shape (V8 keeps it monomorphic); on the wire, everything sent to one
// thread in one tick goes as one flat array in one postMessage (see wire.ts).

import type { ActorId } from './interfaces.js';

/**
 * What an envelope carries. Kinds below 20 are addressed to an actor, the
 * rest to a thread. `ref` and `body` are named per kind below; a kind that
 * names neither leaves them 0 and null.
 */
export const Kind = {
  /** `body`: the message. */
  cast: 1,
  /** `body`: the message, `ref`: the caller's call number. */
  call: 2,
  /** To the caller; `ref`: its call number, `body`: the reply. */
  reply: 3,
  /** To the caller; `ref`: its call number, `body`: the callee's exit reason. */
  callFailed: 4,
  link: 5,
  unlink: 6,
  /** `ref`: the monitor ref. */
  monitor: 7,
  /** `ref`: the monitor ref. */
  demonitor: 8,
  /** To the watcher; `from`: the dead actor, `ref`: the monitor ref, `body`: the reason. */
  down: 9,
  /** The exit signal of `exit(to, reason)`; `body`: the reason. */
  exit: 10,
  /** The exit signal a link carries when `from` ends; `body`: the reason. */
  linkExit: 11,

  /** main -> host: start an actor; `ref`: the spawn number, `body`: SpawnOrder. */
  spawn: 20,
  /** host -> main: `ref`: the spawn number, `body`: the new id. */
  spawned: 21,
  /** host -> main: `ref`: the spawn number, `body`: the exit reason of the failed init. */
  spawnFailed: 22,
  /** host -> main: an actor asks for a spawn; `ref`: the host's request number, `body`: SpawnRequest. */
  spawnRequest: 23,
  /** main -> host: `ref`: the request number, `body`: SpawnOutcome. */
  spawnOutcome: 24,
  /** host -> main: `to` ended with reason `body`. */
  exited: 25,
  /** main -> hosts: name `body` now belongs to `from`. */
  nameSet: 26,
  /** main -> hosts: name `body` of `from` is free. */
  nameCleared: 27,
  /** host -> main: `body.id` registers name `body.name`. */
  register: 28,
  /** main -> host: thread `ref` started; `body`: the MessagePort to it. */
  threadUp: 29,
  /** main -> hosts: thread `ref` is gone; `body`: the actors that died `killed` with it (any other actor of it was dead already). */
  threadDown: 30,
  /** host -> main: kill actor `to` (it lives on another thread). */
  killRequest: 31,
  /** host -> main: kill number `ref` done (kills go to a host on a port of their own: see ActorHost.attachKillPort). */
  killAck: 33,
  /** main -> host: stop every actor with `shutdown`. */
  stopAll: 34,
  /** host -> main: every actor of thread `ref` stopped. */
  stopped: 35,
  /** host -> main: thread `ref` is up and listening. */
  ready: 36,
} as const;

export interface Envelope {
  kind: number;
  /** The target actor, or '' for a message to the thread itself. */
  to: ActorId;
  /** The sender (or, for a thread-level message, the actor it is about). */
  from: ActorId;
  /** What the message refers to: a call, spawn, request or kill number, a monitor ref, or a thread (see Kind). */
  ref: number | string;
  /** What it carries: a message, a reply, an exit reason, an order (see Kind). */
  body: unknown;
}

/** Anything with postMessage: a Worker, a MessagePort, parentPort. */
export interface PostTarget {
  postMessage(value: unknown, transferList?: readonly Transferable[]): void;
}

type Transferable = import('node:worker_threads').TransferListItem;

export function envelope(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): Envelope {
  return { kind, to, from, ref, body };
}

