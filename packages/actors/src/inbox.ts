// The main thread's inbox: a process without behaviour, so that code outside
// any actor can receive mailbox messages (a subscription's events, a DOWN)
// the way an actor does. It is a passive ActorCell on thread 0: routing,
// links, monitors and names treat it as any other actor.

import type { ActorCell } from './actor-cell.js';
import { ActorError } from './errors.js';
import { isExitReason } from './exit-reason.js';
import type { ActorId, ActorRef, ExitReason, Inbox, MonitorRef, SystemMessage } from './interfaces.js';

const anyMessage = (): boolean => true;

export class MainInbox<Msg> implements Inbox<Msg> {
  readonly ref: ActorRef<Msg>;
  readonly #cell: ActorCell;

  constructor(cell: ActorCell) {
    this.#cell = cell;
    this.ref = Object.freeze({ id: cell.id });
  }

  get name(): string | undefined {
    return this.#cell.name;
  }

  get closed(): boolean {
    return this.#cell.dead;
  }

  receive<T extends Msg | SystemMessage>(predicate: (msg: Msg | SystemMessage) => msg is T, timeoutMs?: number): Promise<T | undefined>;
  receive(predicate?: (msg: Msg | SystemMessage) => boolean, timeoutMs?: number): Promise<Msg | SystemMessage | undefined>;
  receive(predicate: (msg: Msg | SystemMessage) => boolean = anyMessage, timeoutMs = Number.POSITIVE_INFINITY): Promise<unknown> {
    if (typeof predicate !== 'function') return Promise.reject(new ActorError('bad_argument', 'inbox.receive: the predicate must be a function'));
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs)) {
      return Promise.reject(new ActorError('bad_argument', `inbox.receive: timeoutMs must be a number, got ${String(timeoutMs)}`));
    }
    try {
      return this.#cell.receive(predicate as (msg: unknown) => boolean, timeoutMs);
    } catch (error) {
      // The predicate threw on a message already queued.
      return Promise.reject(error);
    }
  }

  monitor(target: ActorRef | ActorId | string): MonitorRef {
    return this.#cell.ctx.monitor(target);
  }

  demonitor(ref: MonitorRef, options?: { flush?: boolean }): void {
    this.#cell.ctx.demonitor(ref);
    if (options?.flush === true) this.#cell.flushDown(ref);
  }

  close(reason: ExitReason = 'normal'): void {
    if (!isExitReason(reason)) throw new ActorError('bad_argument', `inbox.close: not an exit reason: ${String(reason)}`);
    this.#cell.exit(reason, false);
  }

  [Symbol.asyncIterator](): AsyncIterator<Msg | SystemMessage> {
    return {
      next: async (): Promise<IteratorResult<Msg | SystemMessage>> => {
        const msg = await this.receive();
        // A closed inbox resolves undefined; an open one only for a message that is undefined.
        if (msg === undefined && this.#cell.dead) return { done: true, value: undefined };
        return { done: false, value: msg as Msg | SystemMessage };
      },
      return: async (): Promise<IteratorResult<Msg | SystemMessage>> => ({ done: true, value: undefined }),
    };
  }
}
