// What travels between threads. In a thread an envelope is a plain object of
// fixed shape (V8 keeps it monomorphic); on the wire, everything sent to one
// thread in one tick goes as one flat array in one postMessage (see Peer in
// actor-host.ts).

import type { ActorId } from './interfaces.js';

/** What an envelope carries. Kinds below 20 are addressed to an actor, the rest to a thread. */
export const Kind = {
  /** `m`: the message. */
  cast: 1,
  /** `m`: the message, `r`: the caller's correlation number. */
  call: 2,
  /** To the caller; `r`: correlation, `m`: the reply. */
  reply: 3,
  /** To the caller; `r`: correlation, `m`: the callee's exit reason. */
  callFailed: 4,
  link: 5,
  unlink: 6,
  /** `r`: the monitor ref. */
  monitor: 7,
  demonitor: 8,
  /** To the watcher; `from`: the dead actor, `r`: the monitor ref, `m`: the reason. */
  down: 9,
  /** Exit signal; `m`: the reason, `r`: 1 when it comes from a link, 0 from `exit()`. */
  exit: 10,

  /** main -> host: start an actor; `r`: spawn number, `m`: SpawnOrder. */
  spawn: 20,
  /** host -> main: `r`: spawn number, `m`: the new id. */
  spawned: 21,
  /** host -> main: `r`: spawn number, `m`: the exit reason of the failed init. */
  spawnFailed: 22,
  /** host -> main: an actor asks for a spawn; `r`: the host's request number, `m`: SpawnRequest. */
  spawnRequest: 23,
  /** main -> host: `r`: the request number, `m`: SpawnOutcome. */
  spawnOutcome: 24,
  /** host -> main: `from` ended with reason `m`. */
  exited: 25,
  /** main -> hosts: name `m` now belongs to `from`. */
  nameSet: 26,
  /** main -> hosts: name `m` of `from` is free. */
  nameCleared: 27,
  /** host -> main: `from` registers name `m`. */
  register: 28,
  /** main -> host: thread `r` started; `m`: the MessagePort to it. */
  threadUp: 29,
  /** main -> hosts: thread `r` is gone; `m`: the actors that died `killed` with it (any other actor of it was dead already). */
  threadDown: 30,
  /** host -> main: kill actor `to` (it lives on another thread). */
  killRequest: 31,
  /** host -> main: kill `r` done (kills go to a host on a port of their own: see ActorHost.attachKillPort). */
  killAck: 33,
  /** main -> host: stop every actor with `shutdown`. */
  stopAll: 34,
  /** host -> main: every actor stopped. */
  stopped: 35,
  /** host -> main: the thread is up and listening. */
  ready: 36,
} as const;

export interface Envelope {
  k: number;
  /** The target actor, or '' for a message to the thread itself. */
  to: ActorId;
  from: ActorId;
  r: number | string;
  m: unknown;
}

/** Anything with postMessage: a Worker, a MessagePort, parentPort. */
export interface PostTarget {
  postMessage(value: unknown, transferList?: readonly Transferable[]): void;
}

type Transferable = import('node:worker_threads').TransferListItem;

export function envelope(k: number, to: ActorId, from: ActorId, r: number | string, m: unknown): Envelope {
  return { k, to, from, r, m };
}

