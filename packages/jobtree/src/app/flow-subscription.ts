// A subscription to a whole flow: the state changes of every job of the
// tree under a job, as one stream. It is made of one subscription per job
// of the tree, each of its own (never shared with the app's `subscribe`,
// whose taker would otherwise split the events with it), made through the
// same notifiers (or, in a client process of a shared store, the owner's),
// so it holds across notifier deaths as they do. The jobs of a flow are all
// added by one `addFlow` and a flow never gains jobs later, so the tree read
// when subscribing names every job there will ever be in it.
//
// Each job's events are moved into the flow's queue synchronously as they
// arrive, so they keep their order per job. When the job subscribed to
// (the root) reaches a terminal state, the jobs of its tree are read once
// more and any whose state differs from the last one reported gets an
// event (the children a cancelled or removed root took with it in the same
// transaction, whose notifier may not have reported them yet); the root's
// own terminal event comes last and ends the subscription.

import { type FlowJobRef, type FlowNode, JobsError, type JobStateEntry, type JsonValue } from '@jobtree/core';
import { type SubscriptionState, isTerminal } from './job-event.js';
import type { Subscription } from './subscription.js';

/** One state change of a job of a subscribed flow. */
export interface FlowStateChange {
  type: string;
  id: string;
  /** Its parent in the flow: `undefined` for a root that is no job's child. */
  parent: FlowJobRef | undefined;
  state: SubscriptionState;
  /** The job's data; `undefined` once it is removed. */
  data: JsonValue | undefined;
}

/** What a flow subscription is made with: the app's calls (served by the owner in a client process). */
export interface FlowSubscriptionSource {
  getFlow(type: string, id: string): Promise<FlowNode | undefined>;
  getJobStates(type: string, ids: readonly string[]): Promise<JobStateEntry[]>;
  /** A subscription of its own (never the shared one of `app.subscribe`). */
  subscribe(type: string, id: string): Promise<Subscription>;
  unsubscribe(sub: Subscription): Promise<void>;
}

interface Member {
  type: string;
  id: string;
  parent: FlowJobRef | undefined;
  /** The state last reported (or read in the tree). */
  last: SubscriptionState;
  sub: Subscription | undefined;
}

type Waiter = () => void;

/**
 * A subscription to the flow under a job (`app.subscribeFlow`). `tree` is
 * the flow as read when subscribing; iterating gives every later state
 * change of any job in it, each naming the job and its parent, in order
 * per job. The iteration ends after the root's `finished` or `not_found`,
 * on `app.unsubscribe`, and when the app closes; it throws a `JobsError`
 * when a job's subscription could not go on (`unavailable` when a notifier
 * could not be reached again, `owner_lost` in a client process whose owner
 * went away).
 */
export class FlowSubscription implements AsyncIterable<FlowStateChange> {
  readonly type: string;
  readonly id: string;
  readonly tree: FlowNode;
  readonly #source: FlowSubscriptionSource;
  readonly #members: Member[] = [];
  readonly #queue: FlowStateChange[] = [];
  readonly #waiters = new Set<Waiter>();
  /** The root reached a terminal state: the last read and the end are under way. */
  #ending = false;
  #ended = false;
  #error: JobsError | undefined;

  private constructor(source: FlowSubscriptionSource, tree: FlowNode) {
    this.#source = source;
    this.type = tree.type;
    this.id = tree.id;
    this.tree = tree;
  }

  /** @internal made by the app's `subscribeFlow` */
  static async open(source: FlowSubscriptionSource, type: string, id: string): Promise<FlowSubscription> {
    const tree = await source.getFlow(type, id);
    if (tree === undefined) {
      const [entry] = await source.getJobStates(type, [id]);
      if (entry?.state === undefined) throw new JobsError('not_found', `no job ${JSON.stringify(id)} of type ${JSON.stringify(type)}`);
      throw new JobsError('not_in_flow', `job ${JSON.stringify(id)} of type ${JSON.stringify(type)} is in no flow: subscribe to it alone`);
    }
    const flow = new FlowSubscription(source, tree);
    await flow.#subscribeAll();
    return flow;
  }

  /** Whether no more events will come (the queue may still hold some). */
  get ended(): boolean {
    return this.#ended;
  }

  /** @internal `app.unsubscribe`: ends it, dropping the events it had queued. */
  async close(): Promise<void> {
    this.#queue.length = 0;
    this.#end();
    await this.#unsubscribeAll();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FlowStateChange> {
    for (;;) {
      const next = this.#queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#ended) {
        if (this.#error !== undefined) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => {
        const waiter = (): void => {
          this.#waiters.delete(waiter);
          resolve();
        };
        this.#waiters.add(waiter);
      });
    }
  }

  async #subscribeAll(): Promise<void> {
    const visit = (node: FlowNode, parent: FlowJobRef | undefined): void => {
      this.#members.push({ type: node.type, id: node.id, parent, last: node.state ?? 'not_found', sub: undefined });
      for (const child of node.children) visit(child, { type: node.type, id: node.id });
    };
    visit(this.tree, this.tree.parent);
    try {
      // Root last: once it is subscribed, every job under it is.
      for (const member of this.#members.slice(1)) await this.#subscribe(member);
      await this.#subscribe(this.#members[0] as Member);
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  async #subscribe(member: Member): Promise<void> {
    if (this.#ended || member.last === 'not_found') return;
    let sub: Subscription;
    try {
      sub = await this.#source.subscribe(member.type, member.id);
    } catch (error) {
      if (!JobsError.is(error, 'not_found')) throw error;
      this.#changed(member, 'not_found', undefined);
      return;
    }
    member.sub = sub;
    // What changed between the tree's read and this subscription (and a root that had ended already ends it).
    if (sub.state !== member.last || (member === this.#members[0] && isTerminal(sub.state))) {
      this.#changed(member, sub.state, sub.data as JsonValue | undefined);
    }
    const pull = (): void => {
      for (let event = sub.peek(undefined); event !== undefined; event = sub.peek(undefined)) {
        const change = sub.take(event);
        this.#changed(member, change.state, change.data as JsonValue | undefined);
      }
      if (sub.ended && sub.error !== undefined && !this.#ending) this.#fail(sub.error);
      else if (sub.ended && !isTerminal(sub.state) && !this.#ending) this.#end();
    };
    sub.onChange(pull);
    pull();
  }

  #changed(member: Member, state: SubscriptionState, data: JsonValue | undefined): void {
    if (this.#ending || this.#ended) return;
    member.last = state;
    const change: FlowStateChange = { type: member.type, id: member.id, parent: member.parent, state, data };
    if (member === this.#members[0] && isTerminal(state)) {
      this.#ending = true;
      void this.#rootEnded(change);
      return;
    }
    this.#queue.push(change);
    this.#wake();
  }

  async #rootEnded(last: FlowStateChange): Promise<void> {
    try {
      await this.#unsubscribeAll();
      const byType = new Map<string, Member[]>();
      for (const member of this.#members.slice(1)) {
        // A job gone is gone for good from the flow: a job added under its id since is another's.
        if (member.last === 'not_found') continue;
        const list = byType.get(member.type) ?? [];
        list.push(member);
        byType.set(member.type, list);
      }
      for (const [type, members] of byType) {
        const entries = new Map((await this.#source.getJobStates(type, members.map((member) => member.id))).map((entry) => [entry.id, entry]));
        for (const member of members) {
          const entry = entries.get(member.id);
          let state: SubscriptionState = entry?.state ?? 'not_found';
          if (state === member.last) continue;
          // A job there again after its end is this flow's child run again
          // only while its link names its parent here; else its id is a new
          // job's since retention pruned the child, which is gone.
          if (member.last === 'finished' && state !== 'not_found' && !(await this.#stillChild(member))) state = 'not_found';
          member.last = state;
          this.#queue.push({ type: member.type, id: member.id, parent: member.parent, state, data: state === 'not_found' ? undefined : entry?.data });
        }
      }
      this.#queue.push(last);
      this.#end();
    } catch (error) {
      this.#fail(error instanceof JobsError ? error : new JobsError('unavailable', error instanceof Error ? error.message : String(error)));
    }
  }

  /** Whether the job under `member`'s id is still the child of its parent in this flow. */
  async #stillChild(member: Member): Promise<boolean> {
    const parent = (await this.#source.getFlow(member.type, member.id))?.parent;
    return parent !== undefined && parent.type === member.parent?.type && parent.id === member.parent.id;
  }

  async #unsubscribeAll(): Promise<void> {
    const subs = this.#members.flatMap((member) => (member.sub === undefined ? [] : [member.sub]));
    for (const member of this.#members) member.sub = undefined;
    await Promise.all(subs.map((sub) => this.#source.unsubscribe(sub).catch(() => undefined)));
  }

  #fail(error: JobsError): void {
    if (this.#ended) return;
    this.#error = error;
    this.#end();
    void this.#unsubscribeAll();
  }

  #end(): void {
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}
