// The spawns the main thread has ordered from host threads and that have not
// been answered yet: each order is numbered, counted against its thread's
// load, and settled by the thread's answer (the new id, or the reason its
// init failed) or by the thread's end.

import { ActorError, describeReason } from './errors.js';
import type { SpawnOrder, SpawnRequest } from './host-protocol.js';
import type { ActorId, ExitReason, ThreadId } from './interfaces.js';
import type { HostThread } from './thread-pool.js';

/** An order sent to a host thread and not answered yet. */
export interface PendingOrder {
  readonly thread: HostThread;
  readonly request: SpawnRequest;
  readonly resolve: (id: ActorId) => void;
  readonly reject: (error: ActorError) => void;
}

export class SpawnOrders {
  readonly #orders = new Map<number, PendingOrder>();
  #seq = 0;
  readonly #send: (thread: ThreadId, ref: number, order: SpawnOrder) => void;

  /** @param send posts order number `ref` to `thread` */
  constructor(send: (thread: ThreadId, ref: number, order: SpawnOrder) => void) {
    this.#send = send;
  }

  /** Orders the spawn from `thread` once it is up; settled by `answered` (or `threadEnded`). */
  async place(thread: HostThread, request: SpawnRequest): Promise<ActorId> {
    thread.pendingSpawns++;
    try {
      await thread.ready;
    } catch (error) {
      thread.pendingSpawns--;
      throw new ActorError('thread_failed', `spawn of ${request.module}: host thread ${thread.id} failed to start: ${(error as Error).message}`);
    }
    return new Promise<ActorId>((resolve, reject) => {
      const ref = ++this.#seq;
      this.#orders.set(ref, { thread, request, resolve, reject });
      this.#send(thread.id, ref, orderOf(request));
    });
  }

  /** The thread answered order `ref`: the order, no longer pending (undefined when it is not pending any more). */
  answered(ref: number): PendingOrder | undefined {
    const order = this.#orders.get(ref);
    if (order === undefined) return undefined;
    this.#orders.delete(ref);
    order.thread.pendingSpawns--;
    return order;
  }

  /** An order to `thread` waits for its answer. */
  pendingOn(thread: ThreadId): boolean {
    for (const order of this.#orders.values()) if (order.thread.id === thread) return true;
    return false;
  }

  /** The thread ended: its unanswered spawns fail `killed`. */
  threadEnded(thread: HostThread): void {
    for (const [ref, order] of [...this.#orders]) {
      if (order.thread !== thread) continue;
      this.#orders.delete(ref);
      order.reject(new ActorError('killed', `spawn of ${order.request.module}: its host thread ${thread.id} ended`, 'killed'));
    }
  }
}

/** What the thread that hosts the new actor is told of a request. */
export function orderOf(request: SpawnRequest): SpawnOrder {
  return {
    module: request.module,
    exportName: request.exportName,
    args: request.args,
    name: request.name,
    linkTo: request.linkTo,
    monitor: request.monitor,
  };
}

/** What the spawner gets when the new actor's init failed (or it was killed during init). */
export function initFailed(request: SpawnRequest, reason: ExitReason): ActorError {
  if (reason === 'killed') return new ActorError('killed', `spawn of ${request.module}: killed during init`, reason);
  return new ActorError('init_failed', `spawn of ${request.module}: init failed (${describeReason(reason)})`, reason);
}
