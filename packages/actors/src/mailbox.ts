// An actor's mailbox: what has come for it and not been handled yet, in
// arrival order, and the selective receives waiting on it. Handling reads
// from the head; a selective receive takes the oldest entry it accepts from
// anywhere. The consumed head stays in the array until it is worth
// compacting, so that reading in order costs no shift.

import { type EnvelopeOf, Kind } from './envelope.js';
import type { ActorId, MonitorRef, SystemMessage, TimeoutMessage } from './interfaces.js';
import { LongTimeout } from './max-timer.js';

/** The kind of mailbox entries that are not from another actor: DOWN, trapped EXIT, TIMEOUT. */
export const INFO = 0;

/** What the runtime itself tells an actor; never on the wire. */
export interface InfoEntry {
  kind: typeof INFO;
  to: ActorId;
  from: ActorId;
  ref: 0;
  body: SystemMessage | TimeoutMessage;
}

/** What a mailbox holds: casts and calls from other actors, and the runtime's notices. */
export type MailboxEntry = EnvelopeOf<typeof Kind.cast | typeof Kind.call> | InfoEntry;

/** A notice to actor `id`, of the same shape as an envelope (so V8 keeps mailbox reads monomorphic). */
export function infoEntry(id: ActorId, msg: SystemMessage | TimeoutMessage): InfoEntry {
  return { kind: INFO, to: id, from: id, ref: 0, body: msg };
}

/** Mailboxes compact their consumed head once it is this long and more than half the array. */
const COMPACT_AT = 1024;

/** What `take` answers when no queued message is accepted (`undefined` is a message like any other). */
export const NOT_RECEIVABLE = Symbol('not receivable');

interface Receiver {
  predicate: (msg: unknown) => boolean;
  resolve: (msg: unknown) => void;
  reject: (error: unknown) => void;
  timer: LongTimeout | undefined;
}

export class Mailbox {
  #entries: MailboxEntry[] = [];
  #head = 0;
  #receivers: Receiver[] = [];

  get hasMail(): boolean {
    return this.#head < this.#entries.length;
  }

  /** A selective receive is waiting for a message. */
  get waiting(): boolean {
    return this.#receivers.length > 0;
  }

  push(env: MailboxEntry): void {
    this.#entries.push(env);
  }

  /** The oldest entry, taken out (undefined when there is none). */
  shift(): MailboxEntry | undefined {
    const env = this.#entries[this.#head];
    if (env === undefined) return undefined;
    this.#takeHead();
    return env;
  }

  /** Drops the oldest entry (already read by the caller). */
  #takeHead(): void {
    this.#entries[this.#head++] = undefined as unknown as MailboxEntry;
    if (this.#head === this.#entries.length) {
      this.#entries.length = 0;
      this.#head = 0;
    } else if (this.#head >= COMPACT_AT && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }

  #takeAt(i: number): void {
    // The oldest message is the common case (an inbox read in order): no splice.
    if (i === this.#head) this.#takeHead();
    else this.#entries.splice(i, 1);
  }

  /** Drops a `DOWN` with this monitor ref, if it has arrived (demonitor with flush). */
  flushDown(ref: MonitorRef): void {
    const entries = this.#entries;
    for (let i = this.#head; i < entries.length; i++) {
      const env = entries[i] as MailboxEntry;
      if (env.kind === INFO && env.body.type === 'DOWN' && env.body.ref === ref) {
        this.#takeAt(i);
        return;
      }
    }
  }

  /** Empties the mailbox, handing each entry still queued to `visit`, oldest first. */
  clear(visit: (env: MailboxEntry) => void): void {
    for (let i = this.#head; i < this.#entries.length; i++) visit(this.#entries[i] as MailboxEntry);
    this.#entries = [];
    this.#head = 0;
  }

  /** The oldest queued message a receive may see that `predicate` accepts, taken out; NOT_RECEIVABLE when there is none. */
  take(predicate: (msg: unknown) => boolean): unknown {
    const entries = this.#entries;
    for (let i = this.#head; i < entries.length; i++) {
      const msg = receivable(entries[i] as MailboxEntry);
      if (msg !== NOT_RECEIVABLE && predicate(msg)) {
        this.#takeAt(i);
        return msg;
      }
    }
    return NOT_RECEIVABLE;
  }

  /**
   * Waits for the first message `predicate` accepts that `offer` brings.
   * When `timeoutMs` (finite) passes first it resolves `undefined`, if
   * `stillWaits()` says so then (otherwise it never settles).
   */
  wait(predicate: (msg: unknown) => boolean, timeoutMs: number, stillWaits: () => boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const receiver: Receiver = { predicate, resolve, reject, timer: undefined };
      if (Number.isFinite(timeoutMs)) {
        receiver.timer = new LongTimeout(() => {
          if (!stillWaits()) return;
          const at = this.#receivers.indexOf(receiver);
          if (at >= 0) this.#receivers.splice(at, 1);
          resolve(undefined);
        }, timeoutMs);
      }
      this.#receivers.push(receiver);
    });
  }

  /**
   * Hands a message that has just come to the oldest waiting receive that
   * accepts it: true when one took it, false when it is to be queued. A
   * predicate that throws goes to `predicateThrew`: true there means the
   * actor is gone and the message with it; false means that receive fails
   * with the error and the others are asked.
   */
  offer(env: MailboxEntry, predicateThrew: (error: unknown) => boolean): boolean {
    const msg = receivable(env);
    if (msg === NOT_RECEIVABLE) return false;
    const receivers = this.#receivers;
    for (let i = 0; i < receivers.length; i++) {
      const receiver = receivers[i] as Receiver;
      let matched: boolean;
      try {
        matched = receiver.predicate(msg);
      } catch (error) {
        if (predicateThrew(error)) return true;
        receivers.splice(i--, 1);
        receiver.timer?.clear();
        receiver.reject(error);
        continue;
      }
      if (matched) {
        receivers.splice(i, 1);
        receiver.timer?.clear();
        receiver.resolve(msg);
        return true;
      }
    }
    return false;
  }

  /** Ends every waiting receive: each resolves `undefined` when `settle`, never settles otherwise. */
  cancelReceivers(settle: boolean): void {
    const receivers = this.#receivers;
    this.#receivers = [];
    for (const receiver of receivers) {
      receiver.timer?.clear();
      if (settle) receiver.resolve(undefined);
    }
  }
}

/** What a receive may see of a mailbox entry: cast messages, DOWN and EXIT; never calls or timers. */
function receivable(env: MailboxEntry): unknown {
  if (env.kind === Kind.cast) return env.body;
  if (env.kind === INFO && env.body.type !== 'TIMEOUT') return env.body;
  return NOT_RECEIVABLE;
}
