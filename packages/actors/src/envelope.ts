// What travels between threads. In a thread an envelope is a plain object of
// fixed shape (V8 keeps it monomorphic); on the wire, everything sent to one
// thread in one tick goes as one flat array in one postMessage (see wire.ts).
// Its type is a union with one member per kind, so that what `ref` and
// `body` hold is known wherever the kind has been checked.

import type { MessagePort } from 'node:worker_threads';
import type { SpawnOrder, SpawnOutcome, SpawnRequest } from './host-protocol.js';
import type { ActorId, ExitReason, MonitorRef, ThreadId } from './interfaces.js';

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
  /** host -> main: kill number `ref` done (kills go to a host on a port of their own: see kill-port.ts). */
  killAck: 33,
  /** main -> host: stop every actor with `shutdown`. */
  stopAll: 34,
  /** host -> main: every actor of thread `ref` stopped. */
  stopped: 35,
  /** host -> main: thread `ref` is up and listening. */
  ready: 36,
} as const;

/** What `ref` and `body` hold for each kind (the comments on Kind say what they mean). */
interface Payloads {
  [Kind.cast]: { ref: 0; body: unknown };
  [Kind.call]: { ref: number; body: unknown };
  [Kind.reply]: { ref: number; body: unknown };
  [Kind.callFailed]: { ref: number; body: ExitReason };
  [Kind.link]: { ref: 0; body: null };
  [Kind.unlink]: { ref: 0; body: null };
  [Kind.monitor]: { ref: MonitorRef; body: null };
  [Kind.demonitor]: { ref: MonitorRef; body: null };
  [Kind.down]: { ref: MonitorRef; body: ExitReason };
  [Kind.exit]: { ref: 0; body: ExitReason };
  [Kind.linkExit]: { ref: 0; body: ExitReason };

  [Kind.spawn]: { ref: number; body: SpawnOrder };
  [Kind.spawned]: { ref: number; body: ActorId };
  [Kind.spawnFailed]: { ref: number; body: ExitReason };
  [Kind.spawnRequest]: { ref: number; body: { request: SpawnRequest; thread: ThreadId } };
  [Kind.spawnOutcome]: { ref: number; body: SpawnOutcome };
  [Kind.exited]: { ref: 0; body: ExitReason };
  [Kind.nameSet]: { ref: 0; body: string };
  [Kind.nameCleared]: { ref: 0; body: string };
  [Kind.register]: { ref: 0; body: { id: ActorId; name: string } };
  [Kind.threadUp]: { ref: ThreadId; body: MessagePort };
  [Kind.threadDown]: { ref: ThreadId; body: ActorId[] };
  [Kind.killRequest]: { ref: 0; body: null };
  [Kind.killAck]: { ref: number; body: null };
  [Kind.stopAll]: { ref: 0; body: null };
  [Kind.stopped]: { ref: ThreadId; body: null };
  [Kind.ready]: { ref: ThreadId; body: null };
}

export type MessageKind = keyof Payloads;
/** The kinds addressed to an actor (below 20). */
export type ActorKind =
  | typeof Kind.cast
  | typeof Kind.call
  | typeof Kind.reply
  | typeof Kind.callFailed
  | typeof Kind.link
  | typeof Kind.unlink
  | typeof Kind.monitor
  | typeof Kind.demonitor
  | typeof Kind.down
  | typeof Kind.exit
  | typeof Kind.linkExit;
/** The kinds addressed to a thread (20 and above). */
export type ControlKind = Exclude<MessageKind, ActorKind>;

export type RefOf<K extends MessageKind> = Payloads[K]['ref'];
export type BodyOf<K extends MessageKind> = Payloads[K]['body'];

/** One message of kind `K` (a union of one member per kind when `K` is). */
export type EnvelopeOf<K extends MessageKind> = K extends MessageKind
  ? {
      kind: K;
      /** The target actor, or '' for a message to the thread itself. */
      to: ActorId;
      /** The sender (or, for a thread-level message, the actor it is about). */
      from: ActorId;
      ref: RefOf<K>;
      body: BodyOf<K>;
    }
  : never;

export type Envelope = EnvelopeOf<MessageKind>;
/** A message to an actor. */
export type ActorEnvelope = EnvelopeOf<ActorKind>;
/** A message to a thread. */
export type ControlEnvelope = EnvelopeOf<ControlKind>;

export function isControl(env: Envelope): env is ControlEnvelope {
  return env.kind >= Kind.spawn;
}

/** Anything with postMessage: a Worker, a MessagePort, parentPort. */
export interface PostTarget {
  postMessage(value: unknown, transferList?: readonly Transferable[]): void;
}

type Transferable = import('node:worker_threads').TransferListItem;

export function envelope<K extends MessageKind>(kind: K, to: ActorId, from: ActorId, ref: RefOf<K>, body: BodyOf<K>): EnvelopeOf<K> {
  return { kind, to, from, ref, body } as EnvelopeOf<K>;
}

/**
 * A message read off the wire, whose fields are only known to be of the
 * wire's types. Only this runtime's threads write the wire, each message as
 * its kind prescribes; a kind this thread does not know is refused where
 * the kind is read (the actor it was sent to ends `MalformedMessage`, a
 * thread-level one is ignored).
 */
export function wireEnvelope(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): Envelope {
  return { kind, to, from, ref, body } as Envelope;
}

