// Actors' subscriptions in a process that shares an embedded store owned by
// another process. The notifiers run in the owner (once per store), so an
// actor here has no `notifier:<type>` to subscribe with; this relay, on the
// main thread, subscribes in the owner for it and casts each pushed event
// to the actor as the JobEvent a notifier would cast. The actor monitors
// the relay's inbox as it would a notifier: when the owner goes away the
// inbox closes, the actor gets its DOWN and subscribes again (in the next
// owner, or with this process's own notifier once it has taken over), as
// after a notifier's death.

import type { ActorId, ActorSystem, Inbox, MonitorRef } from '@jobtree/actors';
import { JobsError, type OwnerConnection, type StoreSharing } from '@jobtree/core';
import { type JobEvent, isTerminal } from './job-event.js';
import type { RelayedSubscribeReply, RemoteSubscribeReply, RemoteSubscriptionEvent, SubscribeReply, SubscriptionRelay } from './subscribe-replies.js';

interface Relayed {
  subscriber: ActorId;
  connection: OwnerConnection;
}

interface RelayInbox {
  inbox: Inbox;
  connection: OwnerConnection;
  /** Monitors of subscribers: a dead one's subscriptions end in the owner. */
  monitors: Map<ActorId, MonitorRef>;
}

export class ActorSubscriptionRelay implements SubscriptionRelay {
  readonly #system: ActorSystem;
  readonly #sharing: StoreSharing;
  readonly #subs = new Map<string, Relayed>();
  #current: RelayInbox | undefined;
  #next = 1;
  #closed = false;

  constructor(system: ActorSystem, sharing: StoreSharing) {
    this.#system = system;
    this.#sharing = sharing;
  }

  /**
   * Subscribes `subscriber` to a job in the owner. Undefined when this
   * process owns the store (its own notifiers serve it).
   */
  async subscribe(type: string, id: string, subscriber: ActorId): Promise<RelayedSubscribeReply | undefined> {
    if (this.#closed) throw new JobsError('closed', 'the jobs app is closed');
    const connection = await this.#sharing.connection();
    if (connection === undefined) return undefined;
    const relay = this.#inboxFor(connection);
    const ref = `actor-sub:${this.#next++}`;
    const early: RemoteSubscriptionEvent[] = [];
    let live = false;
    connection.listen(ref, (payload) => {
      if (live) this.#deliver(ref, type, id, payload as RemoteSubscriptionEvent);
      else early.push(payload as RemoteSubscriptionEvent);
    });
    let reply: RemoteSubscribeReply;
    try {
      reply = (await connection.call('subscribe', [type, id, ref])) as RemoteSubscribeReply;
    } catch (error) {
      connection.unlisten(ref);
      // A notifier answers a missing job with its state, not an error.
      if (JobsError.is(error, 'not_found')) return { ref: undefined, state: 'not_found', data: undefined, relay: relay.inbox.ref.id };
      throw error;
    }
    if (!reply.live) {
      connection.unlisten(ref);
      return { ref: undefined, state: reply.state as 'finished', data: reply.data as SubscribeReply['data'], relay: relay.inbox.ref.id };
    }
    this.#subs.set(ref, { subscriber, connection });
    if (!relay.monitors.has(subscriber)) relay.monitors.set(subscriber, relay.inbox.monitor(subscriber));
    live = true;
    for (const event of early) this.#deliver(ref, type, id, event);
    return { ref, state: reply.state as 'pending' | 'running', data: reply.data as SubscribeReply['data'], relay: relay.inbox.ref.id };
  }

  /** Ends a relayed subscription; false when `ref` is not one. */
  async unsubscribe(ref: string): Promise<boolean> {
    const relayed = this.#subs.get(ref);
    if (relayed === undefined) return false;
    this.#forget(ref);
    if (relayed.connection.open) await relayed.connection.call('unsubscribe', [ref]).catch(() => false);
    return true;
  }

  close(): void {
    this.#closed = true;
    this.#current?.inbox.close();
    this.#current = undefined;
    for (const ref of [...this.#subs.keys()]) this.#forget(ref);
  }

  /** Subscriptions relayed now. */
  get size(): number {
    return this.#subs.size;
  }

  #deliver(ref: string, type: string, id: string, event: RemoteSubscriptionEvent): void {
    const relayed = this.#subs.get(ref);
    if (relayed === undefined) return;
    if ('state' in event) {
      const cast: JobEvent = { type: 'job_event', ref, jobType: type, id, state: event.state, data: event.data as JobEvent['data'] };
      this.#system.cast(relayed.subscriber, cast);
      if (!isTerminal(event.state)) return;
    }
    this.#forget(ref);
  }

  #forget(ref: string): void {
    const relayed = this.#subs.get(ref);
    if (relayed === undefined) return;
    this.#subs.delete(ref);
    relayed.connection.unlisten(ref);
  }

  /** The inbox standing for the owner on `connection`, made with it and closed when it drops. */
  #inboxFor(connection: OwnerConnection): RelayInbox {
    if (this.#current?.connection === connection) return this.#current;
    const relay: RelayInbox = { inbox: this.#system.inbox(), connection, monitors: new Map() };
    this.#current = relay;
    void this.#serve(relay);
    void connection.lost.then(() => {
      for (const [ref, relayed] of [...this.#subs]) if (relayed.connection === connection) this.#forget(ref);
      relay.inbox.close({ shutdown: `the store's owner (pid ${connection.ownerPid}) went away` });
      if (this.#current === relay) this.#current = undefined;
    });
    return relay;
  }

  /** A subscriber's death ends its subscriptions in the owner, as its notifier would. */
  async #serve(relay: RelayInbox): Promise<void> {
    for await (const message of relay.inbox) {
      if (typeof message !== 'object' || message === null || (message as { type?: unknown }).type !== 'DOWN') continue;
      const dead = (message as { id: ActorId }).id;
      relay.monitors.delete(dead);
      for (const [ref, relayed] of [...this.#subs]) if (relayed.subscriber === dead) void this.unsubscribe(ref);
    }
  }
}
