// The calls a thread's actors (and the system) are waiting on: correlation
// numbers, timeouts, and what a caller sees when its callee dies first. A
// reply that finds no entry (late, or its caller died) is dropped.

import { ActorError, callFailure } from './errors.js';
import type { ActorId, ExitReason } from './interfaces.js';
import { LongTimeout } from './max-timer.js';

/** Who waits: an actor keeps the numbers of its calls, so that they are dropped when it dies. */
export interface CallOwner {
  readonly calls: Set<number>;
}

interface PendingCall {
  resolve: (reply: unknown) => void;
  reject: (error: ActorError) => void;
  to: ActorId;
  owner: CallOwner | undefined;
  timer: LongTimeout | undefined;
}

export class CallTable {
  #calls = new Map<number, PendingCall>();
  #seq = 0;

  /** Registers a call and hands its number to `send`; settles with the reply or rejects. */
  open(owner: CallOwner | undefined, to: ActorId, timeoutMs: number, send: (ref: number) => void): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const ref = ++this.#seq;
      const timer = Number.isFinite(timeoutMs) ? new LongTimeout(() => this.#timedOut(ref, timeoutMs), timeoutMs) : undefined;
      this.#calls.set(ref, { resolve, reject, to, owner, timer });
      owner?.calls.add(ref);
      send(ref);
    });
  }

  readonly #timedOut = (ref: number, timeoutMs: number): void => {
    const call = this.#calls.get(ref);
    if (call === undefined) return;
    this.#calls.delete(ref);
    call.owner?.calls.delete(ref);
    call.reject(new ActorError('timeout', `call to ${call.to} got no reply within ${timeoutMs} ms`));
  };

  #take(ref: number): PendingCall | undefined {
    const call = this.#calls.get(ref);
    if (call === undefined) return undefined;
    this.#calls.delete(ref);
    call.timer?.clear();
    call.owner?.calls.delete(ref);
    return call;
  }

  reply(ref: number, value: unknown): void {
    this.#take(ref)?.resolve(value);
  }

  /** The callee ended with `reason` before replying. */
  fail(ref: number, reason: ExitReason): void {
    const call = this.#take(ref);
    call?.reject(callFailure(call.to, reason));
  }

  /** The call could not be made at all. */
  reject(ref: number, error: ActorError): void {
    this.#take(ref)?.reject(error);
  }

  /** Fails every call to a callee that `gone` says is dead, with the reason `reasonOf` gives. */
  failWhere(gone: (to: ActorId) => boolean, reasonOf: (to: ActorId) => ExitReason): void {
    // Deleting the entry being visited is safe while iterating a Map.
    for (const [ref, call] of this.#calls) if (gone(call.to)) this.fail(ref, reasonOf(call.to));
  }

  /** Its owner died: its calls are forgotten, their replies will be dropped. */
  dropOwned(owner: CallOwner): void {
    for (const ref of owner.calls) {
      const call = this.#calls.get(ref);
      call?.timer?.clear();
      this.#calls.delete(ref);
    }
    owner.calls.clear();
  }

  /** Rejects every call still waiting (the system is going away). */
  abandon(error: ActorError): void {
    for (const ref of [...this.#calls.keys()]) this.reject(ref, error);
  }
}
