// The main thread's subscriber: one inbox (a mailbox with an actor id) that
// every notifier casts the main thread's job events to, and that monitors
// those notifiers. It hands events to their Subscription, and when a notifier
// dies it subscribes again with the new one and reports what changed in
// between, so a subscriber is never left waiting because its notifier died.

import { type ActorId, ActorError, type ActorSystem, type Inbox, type MonitorRef } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import { type JobEvent, type SubscriptionState, isJobEvent, isTerminal } from './job-event.js';
import type { NotifierMessage, SubscribeReply } from './notifier.js';
import { type JobStateChange, Subscription, nextEventSeq, notifierLost } from './subscription.js';
import { waitForEvent } from './subscription-wait.js';

export interface SubscriptionHubOptions {
  /** Finds (starting it if needed) the notifier of a type; undefined when the type has no timeout. */
  notifierOf(type: string, previous?: ActorId): Promise<ActorId | undefined>;
  /** How long to wait for a dead notifier's successor before ending its subscriptions with `unavailable`. */
  resubscribeTimeoutMs: number;
}

/** How long an event whose subscription is not known yet is kept (it raced the subscribe reply). */
const EARLY_EVENT_MS = 10_000;

export class SubscriptionHub {
  readonly #system: ActorSystem;
  readonly #inbox: Inbox<JobEvent>;
  readonly #options: SubscriptionHubOptions;
  /** Live subscriptions by the notifier's ref: one shared one, and any number made with `shared: false`. */
  readonly #byRef = new Map<string, Set<Subscription>>();
  /** Live shared subscriptions by "type\0id": subscribing twice gives the same one. */
  readonly #byJob = new Map<string, Subscription>();
  readonly #unshared = new WeakSet<Subscription>();
  readonly #notifiers = new Map<string, { id: ActorId; monitor: MonitorRef }>();
  readonly #early = new Map<string, { events: JobEvent[]; at: number }>();
  #closed = false;
  /** What subscriptions end with and calls reject with once closed (undefined: a clean close). */
  #closeError: JobsError | undefined;
  /** Subscriptions whose notifier died, while they are being moved to its successor. */
  readonly #moving = new Set<Subscription>();
  readonly #loop: Promise<void>;

  constructor(system: ActorSystem, options: SubscriptionHubOptions) {
    this.#system = system;
    this.#options = options;
    this.#inbox = system.inbox<JobEvent>();
    this.#loop = this.#dispatch();
  }

  /** The inbox's id: the subscriber the notifiers see. */
  get id(): ActorId {
    return this.#inbox.ref.id;
  }

  /**
   * With `shared: false`, a subscription of its own, whose events no other
   * taker shares (a flow subscription's, the subscriptions a client process
   * makes through its owner), even while a shared one to the same job lives.
   */
  async subscribe(type: string, id: string, options?: { shared?: boolean }): Promise<Subscription> {
    const shared = options?.shared !== false;
    this.#checkOpen();
    if (typeof type !== 'string' || type === '') throw new JobsError('invalid_job_type', `a job type is a non-empty string, got ${show(type)}`);
    if (typeof id !== 'string' || id === '') throw new JobsError('invalid_job_id', `a job id is a non-empty string, got ${show(id)}`);
    const key = `${type}\u0000${id}`;
    const live = this.#byJob.get(key);
    if (shared && live !== undefined && !live.ended) return live;
    // A notifier killed while it is asked is asked again in its successor.
    const deadline = performance.now() + this.#options.resubscribeTimeoutMs;
    let notifier: ActorId | undefined;
    let reply: SubscribeReply | undefined;
    while (reply === undefined) {
      notifier = await this.#options.notifierOf(type, notifier);
      if (notifier === undefined) {
        throw new JobsError('no_type_timeout', `job type ${JSON.stringify(type)} has no timeout, so no notifier: set one first`);
      }
      try {
        reply = await this.#callSubscribe(notifier, id);
      } catch (error) {
        if (!(error instanceof ActorError)) throw error;
        this.#checkOpen();
        if (performance.now() > deadline) throw notifierLost(type, error.message);
      }
    }
    if (reply.state === 'not_found') throw new JobsError('not_found', `no job ${JSON.stringify(id)} of type ${JSON.stringify(type)}`);
    const sub = new Subscription(type, id, reply.state, reply.data, reply.ref);
    if (reply.ref === undefined) return sub;
    this.#watchNotifier(type, notifier as ActorId);
    if (!shared) this.#unshared.add(sub);
    this.#track(reply.ref, sub);
    this.#deliverEarly(reply.ref);
    return sub;
  }

  async unsubscribe(sub: Subscription): Promise<void> {
    if (!(sub instanceof Subscription)) throw new JobsError('invalid_subscription', 'unsubscribe takes a Subscription from subscribe()');
    const ref = sub.ref;
    sub.drop();
    if (ref === undefined) return;
    this.#forget(ref, sub);
    // The notifier's subscription serves the others of the same job still.
    if (this.#byRef.has(ref)) return;
    const notifier = this.#notifiers.get(sub.type);
    if (notifier !== undefined && !this.#closed) {
      await this.#system.call<boolean, NotifierMessage>(notifier.id, { type: 'unsubscribe', ref }).catch(() => false);
    }
  }

  /**
   * The oldest event of any of `subs` in `state` (any state when omitted),
   * taken from its subscription; the others' events stay queued.
   */
  wait(subs: Subscription | Subscription[], state: SubscriptionState | undefined, timeoutMs: number): Promise<JobStateChange | 'timeout'> {
    return waitForEvent(subs, state, timeoutMs);
  }

  /**
   * Ends every subscription and closes the inbox. Without `error` their
   * iterators finish; with one (the app stopped) they throw it, and later
   * calls reject with it.
   */
  async close(error?: JobsError): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeError = error;
    for (const sub of [...[...this.#byRef.values()].flatMap((subs) => [...subs]), ...this.#moving]) sub.end(error);
    this.#moving.clear();
    this.#byRef.clear();
    this.#byJob.clear();
    this.#inbox.close();
    await this.#loop;
  }

  async #dispatch(): Promise<void> {
    for await (const msg of this.#inbox) {
      const message = msg as JobEvent | { type: 'DOWN'; ref: MonitorRef; id: ActorId };
      if (isJobEvent(message)) this.#onEvent(message);
      else if (message.type === 'DOWN') this.#onNotifierDown(message.ref, message.id);
    }
  }

  #onEvent(event: JobEvent): void {
    const subs = this.#byRef.get(event.ref);
    if (subs === undefined) {
      // The event may have overtaken the subscribe reply that tells its ref.
      const now = performance.now();
      for (const [ref, early] of this.#early) if (now - early.at > EARLY_EVENT_MS) this.#early.delete(ref);
      const early = this.#early.get(event.ref) ?? { events: [], at: now };
      early.events.push(event);
      this.#early.set(event.ref, early);
      return;
    }
    for (const sub of [...subs]) {
      sub.push({ type: event.jobType, id: event.id, state: event.state, data: event.data, seq: nextEventSeq() });
      if (isTerminal(event.state)) this.#forget(event.ref, sub);
    }
  }

  #deliverEarly(ref: string): void {
    const early = this.#early.get(ref);
    if (early === undefined) return;
    this.#early.delete(ref);
    for (const event of early.events) this.#onEvent(event);
  }

  #track(ref: string, sub: Subscription): void {
    let subs = this.#byRef.get(ref);
    if (subs === undefined) {
      subs = new Set();
      this.#byRef.set(ref, subs);
    }
    subs.add(sub);
    if (!this.#unshared.has(sub)) this.#byJob.set(`${sub.type}\u0000${sub.id}`, sub);
  }

  #forget(ref: string, sub: Subscription): void {
    const subs = this.#byRef.get(ref);
    subs?.delete(sub);
    if (subs?.size === 0) this.#byRef.delete(ref);
    const key = `${sub.type}\u0000${sub.id}`;
    if (this.#byJob.get(key) === sub) this.#byJob.delete(key);
  }

  #watchNotifier(type: string, notifier: ActorId): void {
    const known = this.#notifiers.get(type);
    if (known?.id === notifier) return;
    if (known !== undefined) this.#inbox.demonitor(known.monitor);
    this.#notifiers.set(type, { id: notifier, monitor: this.#inbox.monitor(notifier) });
  }

  #onNotifierDown(monitor: MonitorRef, dead: ActorId): void {
    const entry = [...this.#notifiers].find(([, known]) => known.monitor === monitor);
    if (entry === undefined || this.#closed) return;
    const [type] = entry;
    this.#notifiers.delete(type);
    const orphans = [...this.#byRef].flatMap(([ref, subs]) => [...subs].filter((sub) => sub.type === type).map((sub) => [ref, sub] as const));
    for (const [ref, sub] of orphans) this.#forget(ref, sub);
    const subs = orphans.map(([, sub]) => sub);
    for (const sub of subs) this.#moving.add(sub);
    void this.#resubscribe(type, dead, subs).finally(() => {
      for (const sub of subs) this.#moving.delete(sub);
    });
  }

  async #resubscribe(type: string, dead: ActorId, subs: Subscription[]): Promise<void> {
    const deadline = performance.now() + this.#options.resubscribeTimeoutMs;
    let gone = dead;
    let waiting = subs;
    let lastError = 'no notifier came back in time, or the type has no timeout any more';
    // A successor that dies while it is asked (it was killed in turn) is
    // replaced by the next one, until the deadline, as in subscribe().
    while (waiting.length > 0 && !this.#closed && performance.now() < deadline) {
      let notifier: ActorId | undefined;
      try {
        // The lookup itself waits (on name changes, not a timer) for a successor, until its own deadline.
        notifier = await this.#options.notifierOf(type, gone);
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
      }
      if (this.#closed) return;
      if (notifier === undefined || notifier === gone) {
        // No successor in time, or the type lost its timeout: nothing will deliver these events.
        break;
      }
      this.#watchNotifier(type, notifier);
      const again: Subscription[] = [];
      for (const sub of waiting) {
        if (sub.ended) continue;
        try {
          const reply = await this.#callSubscribe(notifier, sub.id);
          const known = sub.lastKnown;
          if (reply.state !== known.state || JSON.stringify(reply.data) !== known.data) {
            sub.push({ type, id: sub.id, state: reply.state, data: reply.data, seq: nextEventSeq() });
          }
          if (reply.ref !== undefined && !sub.ended) {
            sub.ref = reply.ref;
            this.#track(reply.ref, sub);
            this.#deliverEarly(reply.ref);
          }
        } catch (error) {
          lastError = error instanceof Error ? error.message : String(error);
          if (error instanceof ActorError) again.push(sub);
          else sub.end(notifierLost(type, lastError));
        }
      }
      waiting = again;
      gone = notifier;
    }
    if (this.#closed) return;
    for (const sub of waiting) if (!sub.ended) sub.end(notifierLost(type, lastError));
  }

  async #callSubscribe(notifier: ActorId, id: string): Promise<SubscribeReply> {
    return this.#system.call<SubscribeReply, NotifierMessage>(
      notifier,
      { type: 'subscribe', id, subscriber: this.#inbox.ref.id },
      30_000,
    );
  }

  #checkOpen(): void {
    if (this.#closed) throw this.#closeError ?? new JobsError('closed', 'the jobs app is closed');
  }
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
