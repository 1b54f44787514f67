// Subscriptions of a process that shares an embedded store owned by another
// process: that owner's notifiers watch the jobs (the notifiers run once per
// store), and it pushes each event over the connection, where it lands in a
// Subscription like any other. When the owner goes away, the subscriptions
// it served end with JobsError `owner_lost`: whatever happened meanwhile is
// unknown, and a waiting `wait` or iterator must not hang on an owner that
// is gone. Subscribe again (from the new owner) to carry on.

import { JobsError, type JobsErrorCode, type OwnerConnection, type StoreSharing } from '@jobtree/core';
import { isTerminal } from './job-event.js';
import type { RemoteSubscribeReply, RemoteSubscriptionEvent } from './subscribe-replies.js';
import { Subscription, nextEventSeq } from './subscription.js';

export class RemoteSubscriptions {
  readonly #sharing: StoreSharing;
  /** Live subscriptions, each with its channel. */
  readonly #live = new Map<Subscription, { channel: string; connection: OwnerConnection; offLost: () => void }>();
  /** Live shared subscriptions by "type\0id": subscribing twice gives the same one. */
  readonly #byJob = new Map<string, Subscription>();
  #nextChannel = 1;
  #closed = false;
  #closeError: JobsError | undefined;

  constructor(sharing: StoreSharing) {
    this.#sharing = sharing;
  }

  /** Whether this process is a client now (else the app's own hub serves subscriptions). */
  get active(): boolean {
    return this.#sharing.role === 'client';
  }

  /** With `shared: false`, a subscription of its own (see SubscriptionHub.subscribe). */
  async subscribe(type: string, id: string, options?: { shared?: boolean }): Promise<Subscription> {
    const shared = options?.shared !== false;
    this.#checkOpen();
    if (typeof type !== 'string' || type === '') throw new JobsError('invalid_job_type', `a job type is a non-empty string, got ${JSON.stringify(type)}`);
    if (typeof id !== 'string' || id === '') throw new JobsError('invalid_job_id', `a job id is a non-empty string, got ${JSON.stringify(id)}`);
    const key = `${type}\u0000${id}`;
    const live = this.#byJob.get(key);
    if (shared && live !== undefined && !live.ended) return live;
    const connection = await this.#sharing.connection();
    if (connection === undefined) throw new JobsError('owner_lost', 'this process took the store over while subscribing: subscribe again');
    const channel = `sub:${this.#nextChannel++}`;
    // Events may arrive before the answer tells their subscription: keep them until then.
    const early: RemoteSubscriptionEvent[] = [];
    let sub: Subscription | undefined;
    connection.listen(channel, (payload) => {
      if (sub === undefined) early.push(payload as RemoteSubscriptionEvent);
      else this.#deliver(sub, payload as RemoteSubscriptionEvent);
    });
    let reply: RemoteSubscribeReply;
    try {
      reply = (await connection.call('subscribe', [type, id, channel])) as RemoteSubscribeReply;
    } catch (error) {
      connection.unlisten(channel);
      throw error;
    }
    sub = new Subscription(type, id, reply.state, reply.data as never, reply.live ? channel : undefined);
    if (!reply.live) {
      connection.unlisten(channel);
      return sub;
    }
    const made = sub;
    // Stopped once the subscription ends (see #forget): a long-lived connection does not keep every subscription it served.
    const offLost = connection.onLost((error) => {
      if (!this.#live.has(made)) return;
      this.#forget(made);
      made.end(error);
    });
    this.#live.set(sub, { channel, connection, offLost });
    if (shared) this.#byJob.set(key, sub);
    for (const event of early) this.#deliver(sub, event);
    return sub;
  }

  /** Ends `sub` if the owner serves it; false for any other subscription (the app's own hub's). */
  async unsubscribe(sub: Subscription): Promise<boolean> {
    if (!(sub instanceof Subscription)) return false;
    const entry = this.#live.get(sub);
    if (entry === undefined) return false;
    sub.drop();
    this.#forget(sub);
    entry.connection.unlisten(entry.channel);
    if (entry.connection.open) await entry.connection.call('unsubscribe', [entry.channel]).catch(() => false);
    return true;
  }

  /** Ends every subscription (with `error`, when the app stopped). */
  close(error?: JobsError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeError = error;
    for (const [sub, { channel, connection, offLost }] of this.#live) {
      sub.end(error);
      connection.unlisten(channel);
      offLost();
    }
    this.#live.clear();
    this.#byJob.clear();
  }

  #forget(sub: Subscription): void {
    this.#live.get(sub)?.offLost();
    this.#live.delete(sub);
    const key = `${sub.type}\u0000${sub.id}`;
    if (this.#byJob.get(key) === sub) this.#byJob.delete(key);
  }

  #deliver(sub: Subscription, event: RemoteSubscriptionEvent): void {
    if ('state' in event) {
      sub.push({ type: sub.type, id: sub.id, state: event.state, data: event.data as never, seq: nextEventSeq() });
      if (!isTerminal(event.state)) return;
    } else if ('error' in event) {
      sub.end(new JobsError(event.error.code as JobsErrorCode, event.error.message.replace(/^[a-z_]+: /, '')));
    } else sub.end();
    const entry = this.#live.get(sub);
    if (entry !== undefined) {
      this.#forget(sub);
      entry.connection.unlisten(entry.channel);
    }
  }

  #checkOpen(): void {
    if (this.#closed) throw this.#closeError ?? new JobsError('closed', 'the jobs app is closed');
  }
}
