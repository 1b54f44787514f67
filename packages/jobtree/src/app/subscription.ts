// A job subscription made from the main thread: the state of the job when it
// was made, then its events, as an async iterable. The events arrive as
// mailbox messages in the app's inbox (the same `JobEvent`s an actor gets)
// and are handed to the subscription they belong to by the SubscriptionHub.

import { type JobDataOf, JobsError, type JsonValue } from '@jobtree/core';
import { type SubscriptionState, isTerminal } from './job-event.js';

/** One state change of a subscribed job, as `wait` and the iterator give it. */
export interface JobStateChange<T extends string = string> {
  type: T;
  id: string;
  state: SubscriptionState;
  /** The job's data (typed by `JobTypes` for a declared type); `undefined` once it is removed. */
  data: JobDataOf<T> | undefined;
}

interface QueuedEvent {
  type: string;
  id: string;
  state: SubscriptionState;
  data: JsonValue | undefined;
  /** Arrival order across all subscriptions, so `wait` on several takes the oldest. */
  seq: number;
}

type Waiter = () => void;

/**
 * A subscription to one job. `state` and `data` are the job's as of the
 * subscription (then as of the last event taken). Iterate it for the events:
 * the iteration ends after `finished` or `not_found`, on `unsubscribe` and
 * when the app closes; it throws a `JobsError` (`unavailable`) when the
 * type's notifier could not be reached again after it died.
 */
export class Subscription<T extends string = string> implements AsyncIterable<JobStateChange<T>> {
  readonly type: T;
  readonly id: string;
  #state: SubscriptionState;
  #data: JsonValue | undefined;
  /** The notifier's reference; undefined once ended. */
  #ref: string | undefined;
  readonly #queue: QueuedEvent[] = [];
  readonly #waiters = new Set<Waiter>();
  #ended = false;
  /** Whether the final state (a terminal event, or the state of an already-ended subscription) was handed out. */
  #finalTaken = false;
  #error: JobsError | undefined;

  /** @internal made by the app's `subscribe` */
  constructor(type: T, id: string, state: SubscriptionState, data: JsonValue | undefined, ref: string | undefined) {
    this.type = type;
    this.id = id;
    this.#state = state;
    this.#data = data;
    this.#ref = ref;
    if (ref === undefined) this.#ended = true;
  }

  /** The job's state as of the subscription, then as of the last event taken from it. */
  get state(): SubscriptionState {
    return this.#state;
  }

  get data(): JobDataOf<T> | undefined {
    return this.#data as JobDataOf<T> | undefined;
  }

  /** Whether no more events will come (the queue may still hold some). */
  get ended(): boolean {
    return this.#ended;
  }

  /** @internal the notifier's reference of this subscription */
  get ref(): string | undefined {
    return this.#ref;
  }

  /** @internal after the notifier was replaced: the new reference */
  set ref(ref: string | undefined) {
    this.#ref = ref;
  }

  /** @internal the last state the subscriber knows of, to tell what changed while its notifier was down */
  get lastKnown(): { state: SubscriptionState; data: string } {
    const last = this.#queue.at(-1);
    return last === undefined
      ? { state: this.#state, data: JSON.stringify(this.#data) }
      : { state: last.state, data: JSON.stringify(last.data) };
  }

  /** @internal */
  push(event: QueuedEvent): void {
    if (this.#ended) return;
    this.#queue.push(event);
    if (isTerminal(event.state)) this.#end();
    this.#wake();
  }

  /** @internal ends the subscription; with an error, takers get it once the queue is drained */
  end(error?: JobsError): void {
    if (this.#ended) return;
    this.#error = error;
    this.#end();
    this.#wake();
  }

  /** @internal drops queued events (unsubscribe) and ends: nothing more is handed out */
  drop(): void {
    this.#queue.length = 0;
    this.#finalTaken = true;
    this.end();
  }

  /**
   * @internal the final state of an ended subscription with nothing queued,
   * handed out once (a subscription made on a finished job answers one
   * `wait`); undefined after that, after unsubscribe, and while it is live
   */
  takeFinal(state: SubscriptionState | undefined): JobStateChange<T> | undefined {
    if (!this.#ended || this.#finalTaken || this.#queue.length > 0 || !isTerminal(this.#state)) return undefined;
    if (state !== undefined && this.#state !== state) return undefined;
    this.#finalTaken = true;
    return { type: this.type, id: this.id, state: this.#state, data: this.#data as JobDataOf<T> | undefined };
  }

  /** @internal the oldest queued event matching `state`, removed; its seq tells its age */
  peek(state: SubscriptionState | undefined): QueuedEvent | undefined {
    return this.#queue.find((event) => state === undefined || event.state === state);
  }

  /** @internal */
  take(event: QueuedEvent): JobStateChange<T> {
    const at = this.#queue.indexOf(event);
    if (at >= 0) this.#queue.splice(at, 1);
    this.#state = event.state;
    this.#data = event.data;
    if (isTerminal(event.state)) this.#finalTaken = true;
    return { type: this.type, id: event.id, state: event.state, data: event.data as JobDataOf<T> | undefined };
  }

  /** @internal the error that ended it, if any */
  get error(): JobsError | undefined {
    return this.#error;
  }

  /** @internal resolves on the next push or end */
  onChange(waiter: Waiter): () => void {
    this.#waiters.add(waiter);
    return () => this.#waiters.delete(waiter);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<JobStateChange<T>> {
    for (;;) {
      const next = this.peek(undefined);
      if (next !== undefined) {
        yield this.take(next);
        continue;
      }
      if (this.#ended) {
        if (this.#error !== undefined) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => {
        const off = this.onChange(() => {
          off();
          resolve();
        });
      });
    }
  }

  #end(): void {
    this.#ended = true;
    this.#ref = undefined;
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}

let eventSeq = 0;

/** The arrival order of events across every subscription of the process, so `wait` on several takes the oldest. */
export function nextEventSeq(): number {
  eventSeq += 1;
  return eventSeq;
}

/** The error a subscription ends with when its notifier cannot be reached again. */
export function notifierLost(type: string, detail: string): JobsError {
  return new JobsError('unavailable', `the notifier of job type ${JSON.stringify(type)} is gone: ${detail}`);
}
