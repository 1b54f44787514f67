// Routing by actor id, on one thread. A message goes to a mailbox here, to
// the outbox of its target's thread (wire.ts), waits for a thread this one
// has not heard of yet, or bounces as one to a dead pid does in Erlang. The
// batches other threads send are read here too: each message goes to an
// actor here or, thread-level, to the thread's runtime. An actor declared
// dead here before its thread confirms is routed to as a dead pid, and what
// its thread still sends from it is dropped.

import type { MessagePort } from 'node:worker_threads';
import { threadOfId } from './actor-id.js';
import {
  type ActorEnvelope,
  type ActorKind,
  type BodyOf,
  type ControlEnvelope,
  type ControlKind,
  type Envelope,
  envelope,
  isControl,
  Kind,
  type RefOf,
  wireEnvelope,
} from './envelope.js';
import type { ActorId, ThreadId } from './interfaces.js';
import { MAX_BATCH, type MessageSource, Outbox, postBatch, type RunReader, readRuns, singleMessage, type Uncopyable } from './wire.js';

/** Where the router hands what is for this thread: its runtime (ActorHost). */
export interface LocalDelivery {
  /** A message to an actor of this thread, or to the system's own monitors. */
  deliver(env: ActorEnvelope): void;
  /** A message to this thread itself. */
  control(env: ControlEnvelope): void;
  /** `batch[start .. start + n)` are casts from `from` to `to`, read in turn: an idle actor may handle them at once. */
  casts(to: ActorId, from: ActorId, batch: readonly unknown[], start: number, n: number): void;
  /** The same, read out of turn: they are only queued. */
  queueCasts(to: ActorId, from: ActorId, batch: readonly unknown[], start: number, n: number): void;
  /** A message sent from here could not be copied to another thread. */
  readonly uncopyable: Uncopyable;
}

export class Router {
  readonly thread: ThreadId;
  readonly #local: LocalDelivery;
  #peers = new Map<ThreadId, Outbox>();
  #highestThread: ThreadId;
  /** Messages for threads this one has not heard of yet (their port is on its way). */
  #parked = new Map<ThreadId, Envelope[]>();
  #dirty: Outbox[] = [];
  #flushScheduled = false;
  #memoId: ActorId = '';
  #memoThread: ThreadId = -1;
  #memoPeer: Outbox | undefined;
  #receiving = false;
  /** Actors of other threads declared dead here, not yet confirmed by their thread (see declareDead). */
  #dying = new Set<ActorId>();

  constructor(thread: ThreadId, highestThread: ThreadId, local: LocalDelivery) {
    this.thread = thread;
    this.#highestThread = Math.max(thread, highestThread);
    this.#local = local;
  }

  // ---- threads ------------------------------------------------------------

  /** A port to `thread`: what waited for it goes now. */
  addPeer(thread: ThreadId, port: MessageSource): void {
    this.#peers.set(thread, new Outbox(thread, port));
    this.#forgetMemo();
    if (thread > this.#highestThread) this.#highestThread = thread;
    const parked = this.#parked.get(thread);
    if (parked !== undefined) {
      this.#parked.delete(thread);
      for (const env of parked) this.#deliverRemote(thread, env.kind, env.to, env.from, env.ref, env.body);
    }
  }

  /** `thread` is gone: what waited for it bounces, and from now on messages to its actors bounce here. */
  dropPeer(thread: ThreadId): void {
    this.#peers.delete(thread);
    this.#forgetMemo();
    if (thread > this.#highestThread) this.#highestThread = thread;
    const parked = this.#parked.get(thread);
    this.#parked.delete(thread);
    if (parked !== undefined) for (const env of parked) this.bounce(env);
  }

  /**
   * From now on messages to `id` bounce here as to a dead actor, and what
   * its thread still sends from it is dropped, as sent after its death,
   * until `confirmDead` (see ActorHost.declareDead).
   */
  declareDead(id: ActorId): void {
    this.#dying.add(id);
    this.#forgetMemo();
  }

  /** Its thread has confirmed the death (or is gone): nothing more can come from `id`. */
  confirmDead(id: ActorId): void {
    this.#dying.delete(id);
  }

  /** `thread` is gone: nothing more can come from any actor of it. */
  confirmDeadOn(thread: ThreadId): void {
    for (const id of this.#dying) if (threadOfId(id) === thread) this.#dying.delete(id);
  }

  // ---- sending ------------------------------------------------------------

  /** Routes one message by its target's id: a local mailbox, or the outbox of the target's thread. */
  send<K extends ActorKind>(kind: K, to: ActorId, from: ActorId, ref: RefOf<K>, body: BodyOf<K>): void {
    // A one-entry memo: a stream of sends to one actor parses its id and finds its port once.
    if (to !== this.#memoId) {
      if (this.#dying.size !== 0 && this.#dying.has(to)) {
        this.bounce(envelope(kind, to, from, ref, body));
        return;
      }
      this.#memoId = to;
      this.#memoThread = threadOfId(to);
      this.#memoPeer = this.#peers.get(this.#memoThread);
    }
    const peer = this.#memoPeer;
    if (peer !== undefined) this.#enqueue(peer, kind, to, from, ref, body);
    else if (this.#memoThread === this.thread) this.#local.deliver(envelope(kind, to, from, ref, body));
    else this.#deliverRemote(this.#memoThread, kind, to, from, ref, body);
  }

  /** A cast to `to` (an id): the hot path of a cast loop appends it to the run still open for the same target and sender. */
  cast(to: ActorId, from: ActorId, msg: unknown): void {
    if (to === this.#memoId && this.#memoPeer?.appendCast(to, from, msg) === true) return;
    this.send(Kind.cast, to, from, 0, msg);
  }

  #forgetMemo(): void {
    this.#memoId = '';
    this.#memoPeer = undefined;
  }

  /** A thread-level message to `thread`, in order with actor messages to it. */
  sendControl<K extends ControlKind>(thread: ThreadId, kind: K, to: ActorId, ref: RefOf<K>, body: BodyOf<K>, from: ActorId = ''): void {
    const peer = this.#peers.get(thread);
    if (peer !== undefined) this.#enqueue(peer, kind, to, from, ref, body);
  }

  /** Posts now, after what is queued for that thread (for transfers of ports). */
  postNow<K extends ControlKind>(thread: ThreadId, kind: K, ref: RefOf<K>, body: BodyOf<K>, transfer: readonly MessagePort[]): void {
    const peer = this.#peers.get(thread);
    if (peer === undefined) return;
    this.#post(peer);
    peer.target.postMessage(singleMessage(kind, '', '', ref, body), transfer);
  }

  #deliverRemote(thread: ThreadId, kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): void {
    const peer = this.#peers.get(thread);
    if (peer !== undefined) this.#enqueue(peer, kind, to, from, ref, body);
    else if (thread > this.#highestThread) {
      const parked = this.#parked.get(thread);
      const env = wireEnvelope(kind, to, from, ref, body);
      if (parked === undefined) this.#parked.set(thread, [env]);
      else parked.push(env);
    } else this.bounce(wireEnvelope(kind, to, from, ref, body));
  }

  #enqueue(peer: Outbox, kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): void {
    const count = peer.push(kind, to, from, ref, body);
    if (count === 1) {
      this.#dirty.push(peer);
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        queueMicrotask(this.#flush);
      }
    } else if (count >= MAX_BATCH) this.#post(peer);
  }

  #post(peer: Outbox): void {
    const batch = peer.take();
    if (batch !== undefined) postBatch(peer, batch, this.#local.uncopyable);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const dirty = this.#dirty;
    this.#dirty = [];
    for (const peer of dirty) this.#post(peer);
  };

  /** Posts every outbox now (before a thread reports it is done). */
  flush(): void {
    this.#flush();
  }

  /** Posts what is queued for `thread` now, not at the end of the tick. */
  flushTo(thread: ThreadId): void {
    const peer = this.#peers.get(thread);
    if (peer !== undefined) this.#post(peer);
  }

  /** The target does not exist: answer as Erlang does for a dead pid. */
  bounce(env: Envelope): void {
    switch (env.kind) {
      case Kind.call:
        this.send(Kind.callFailed, env.from, env.to, env.ref, 'noproc');
        break;
      case Kind.monitor:
        this.send(Kind.down, env.from, env.to, env.ref, 'noproc');
        break;
      case Kind.link:
        this.send(Kind.linkExit, env.from, env.to, 0, 'noproc');
        break;
      default:
      // A cast, reply or signal to a dead actor is dropped.
    }
  }

  // ---- receiving ----------------------------------------------------------

  /**
   * Reads a batch that came from another thread (see wire.ts); a malformed
   * batch is read up to where it goes wrong. In turn (`inTurn`), an idle
   * actor handles a run of casts at once; out of turn (a batch taken with
   * receiveMessageOnPort in the middle of some other operation) messages
   * are only queued and scheduled, so no actor code runs inside that
   * operation.
   */
  read(batch: unknown, inTurn: boolean): void {
    if (!Array.isArray(batch)) return;
    const outer = this.#receiving;
    this.#receiving = true;
    try {
      readRuns(batch, inTurn ? this.#inTurn : this.#outOfTurn);
    } finally {
      this.#receiving = outer;
    }
  }

  /** Inside the reading of a batch. */
  get receiving(): boolean {
    return this.#receiving;
  }

  /** Sent by an actor declared dead here: it was sent after that death, so it is not delivered. */
  readonly #hears = (from: ActorId): boolean => this.#dying.size === 0 || !this.#dying.has(from);

  /** A message of a batch: to this thread (a control message) or to an actor here. */
  readonly #take = (kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): void => {
    const env = wireEnvelope(kind, to, from, ref, body);
    if (isControl(env)) this.#local.control(env);
    else this.#local.deliver(env);
  };

  readonly #inTurn: RunReader = {
    hears: this.#hears,
    casts: (to, from, batch, start, n) => this.#local.casts(to, from, batch, start, n),
    message: this.#take,
  };

  readonly #outOfTurn: RunReader = {
    hears: this.#hears,
    casts: (to, from, batch, start, n) => this.#local.queueCasts(to, from, batch, start, n),
    message: this.#take,
  };
}
