// The core's face toward actors: what the jobs actors (activity monitors,
// type monitors, notifiers) and job-processing actors call from their worker
// threads. A `Database`, a transaction or a watch cannot cross a thread, so
// every method here is one whole transaction (or a bounded long poll) that
// takes and returns plain, structured-cloneable data.

import { MAX_TIMER_MS } from '@jobtree/actors';
import { RecentExits } from './recent-exits.js';
import type { RelayedSubscribeReply, SubscriptionRelay } from './subscribe-replies.js';
import { ScheduleTimesCache, tickSchedules } from './schedule-ticks.js';
import type {
  AcceptOptions,
  FlowNode,
  Job,
  JobErrorInput,
  JobInfo,
  JobOutcome,
  JobState,
  Jobs,
  JsonValue,
  PruneLimits,
  PruneOptions,
  PruneResult,
  Versionstamp,
} from '@jobtree/core';

/** One job as a notifier needs it: its state and data, or `not_found`. */
export interface JobSnapshot {
  id: string;
  state: JobState | 'not_found';
  data: JsonValue | undefined;
}

/** What a notifier reads on each wake-up, in one call. */
export interface NotifierSnapshot {
  /** The type's activity stamp as of this read. */
  versionstamp: Versionstamp | undefined;
  /** Ids among those asked for that were accepted or updated at or after `since`. */
  active: string[];
  jobs: JobSnapshot[];
}

/** Options of a bridge `accept`: the jobs API's, plus who is waiting. */
export interface BridgeAcceptOptions extends AcceptOptions {
  /**
   * The actor that waits. When it dies before a job is handed over, the
   * wait is cancelled and a job taken for it is given back (pending again),
   * and a call that arrives once it is dead takes no job, so a killed actor
   * never ends up holding a job.
   */
  owner?: string;
}

/**
 * The facade the app exposes as the actor system's core. `jobs` is the core
 * child's current handle; the app swaps the whole bridge when `core` restarts.
 */
export class JobsBridge {
  readonly #jobs: Jobs;
  /** Waiting accepts by owner actor, so an owner's death cancels them. */
  readonly #acceptsByOwner = new Map<string, Set<AbortController>>();
  /** Owners that died: an accept one sent before its death may arrive after it. */
  readonly #exits: RecentExits;
  /** The schedules' parsed times, kept across the ticker's passes. */
  readonly #scheduleTimes = new ScheduleTimesCache();
  /** Called after setTypeTimeout/clearTypeTimeout, so the jobs server checks types at once. */
  readonly #onTypesChanged: () => void;

  /** Relays actors' subscriptions to the owner of a shared store, while this process is its client. */
  readonly #relay: SubscriptionRelay | undefined;

  /** @param exits the actors' deaths, shared by the bridges of one app so that a bridge made after a death knows of it */
  constructor(jobs: Jobs, onTypesChanged: () => void = () => {}, relay?: SubscriptionRelay, exits: RecentExits = new RecentExits()) {
    this.#jobs = jobs;
    this.#onTypesChanged = onTypesChanged;
    this.#relay = relay;
    this.#exits = exits;
  }

  get jobs(): Jobs {
    return this.#jobs;
  }

  // --- types ---------------------------------------------------------------

  getTypes(): Promise<string[]> {
    return this.#jobs.getTypes();
  }

  /**
   * The types whose activity monitor and notifier this process runs: every
   * type with a timeout while it owns the store, none while another process
   * of a shared store owns it (that owner runs them, once per store).
   */
  async typesToWatch(): Promise<string[]> {
    return this.#jobs.role === 'owner' ? this.#jobs.getTypes() : [];
  }

  /**
   * The schedule ticker's pass at `now` (app clock ms): adds the jobs of the
   * due ticks and resolves with when the next is due. Only while this
   * process owns the store (in a client, none: the owner ticks).
   */
  async tickSchedules(now: number): Promise<number | undefined> {
    if (this.#jobs.role !== 'owner') return undefined;
    return (await tickSchedules(this.#jobs, now, this.#scheduleTimes)).nextAt;
  }

  getTypeTimeout(type: string): Promise<number | undefined> {
    return this.#jobs.getTypeTimeout(type);
  }

  async setTypeTimeout(type: string, seconds: number): Promise<void> {
    await this.#jobs.setTypeTimeout(type, seconds);
    this.#onTypesChanged();
  }

  // --- creation and monitoring -----------------------------------------------

  add(type: string, id: string, data?: unknown, options?: Parameters<Jobs['add']>[3]): Promise<JobState> {
    return this.#jobs.add(type, id, data, options);
  }

  remove(type: string, id: string): Promise<boolean> {
    return this.#jobs.remove(type, id);
  }

  cancel(type: string, id: string): Promise<boolean> {
    return this.#jobs.cancel(type, id);
  }

  retry(type: string, id: string): Promise<void> {
    return this.#jobs.retry(type, id);
  }

  /** One prune transaction (see Jobs.pruneFinished): the pruner's. */
  pruneFinished(type: string, outcome: JobOutcome, limits: PruneLimits, options?: PruneOptions): Promise<PruneResult> {
    return this.#jobs.pruneFinished(type, outcome, limits, options);
  }

  getJob(type: string, id: string): Promise<JobInfo | undefined> {
    return this.#jobs.getJob(type, id);
  }

  getJobState(type: string, id: string): Promise<JobState | undefined> {
    return this.#jobs.getJobState(type, id);
  }

  /** The flow under a job (see Jobs.getFlow): what an actor's `subscribeFlowJobs` subscribes to. */
  getFlow(type: string, id: string): Promise<FlowNode | undefined> {
    return this.#jobs.getFlow(type, id);
  }

  getJobData(type: string, id: string): Promise<JsonValue | undefined> {
    return this.#jobs.getJobData(type, id);
  }

  // --- job processing ----------------------------------------------------------

  /**
   * `accept`, cancellable: when `owner` dies while it waits, the wait ends
   * and, should a job have been taken for it in that instant, the job is
   * given back to the queue.
   */
  async accept(type: string, options: BridgeAcceptOptions = {}): Promise<Job | undefined> {
    const { owner, ...acceptOptions } = options;
    if (owner === undefined) return this.#jobs.accept(type, acceptOptions);
    // Sent before its owner's death and arrived after it: nobody is waiting for a job.
    if (this.#exits.has(owner)) return undefined;
    const controller = new AbortController();
    let waits = this.#acceptsByOwner.get(owner);
    if (waits === undefined) {
      waits = new Set();
      this.#acceptsByOwner.set(owner, waits);
    }
    waits.add(controller);
    try {
      // The signal ends the store's wait too; a transaction already taking a
      // job when it fires still delivers it, and that job is given back below.
      const taking = this.#jobs.accept(type, { ...acceptOptions, signal: controller.signal });
      const aborted = new Promise<'aborted'>((resolve) => controller.signal.addEventListener('abort', () => resolve('aborted')));
      const first = await Promise.race([taking, aborted]);
      if (first !== 'aborted') return first;
      // The owner is dead: whatever the wait still takes goes back to the queue.
      taking.then((job) => (job === undefined ? undefined : this.#giveBack(job))).catch(() => {});
      return undefined;
    } finally {
      waits.delete(controller);
      if (waits.size === 0) this.#acceptsByOwner.delete(owner);
    }
  }

  update(job: Job, data?: unknown): Promise<Job> {
    return this.#jobs.update(job, data);
  }

  finish(job: Job, data?: unknown): Promise<'pending' | 'finished'> {
    return this.#jobs.finish(job, data);
  }

  /** Finishes the job `succeeded`, its data kept and `result` stored apart (see `Jobs.complete`). */
  complete(job: Job, result?: unknown): Promise<'pending' | 'finished'> {
    return this.#jobs.complete(job, result);
  }

  /** Gives the job up: it finishes `failed`, its data kept and `error` stored apart (see `Jobs.fail`). */
  fail(job: Job, error: JobErrorInput): Promise<'pending' | 'finished'> {
    return this.#jobs.fail(job, error);
  }

  /** Flags the caller's running job to run again and ends this run: it is pending at once. */
  async release(job: Job): Promise<void> {
    await this.#giveBack(job);
  }

  // --- actors' subscriptions in a client of a shared store ----------------------

  /**
   * Subscribes `subscriber` through the owner of a shared store, when
   * another process owns it; undefined otherwise (this process's notifiers
   * serve it, or the type has none).
   */
  async relaySubscribe(type: string, id: string, subscriber: string): Promise<RelayedSubscribeReply | undefined> {
    return this.#relay?.subscribe(type, id, subscriber);
  }

  /** Ends a relayed subscription (see {@link relaySubscribe}); false when `ref` is not one. */
  async relayUnsubscribe(ref: string): Promise<boolean> {
    return (await this.#relay?.unsubscribe(ref)) ?? false;
  }

  /** The actor `owner` died: end its waiting accepts. */
  ownerExited(owner: string): void {
    this.#exits.add(owner);
    const waits = this.#acceptsByOwner.get(owner);
    if (waits === undefined) return;
    for (const controller of waits) controller.abort();
  }

  async #giveBack(job: Job): Promise<void> {
    const flagged = await this.#jobs.resubmit(job);
    await this.#jobs.finish(flagged);
  }

  // --- activity: the activity monitor, type monitors and notifiers ------------

  getActivityVersionstamp(type: string): Promise<Versionstamp | undefined> {
    return this.#jobs.getActivityVersionstamp(type);
  }

  /**
   * A long poll on the type's activity stamp (a watch cannot cross threads):
   * resolves with the stamp as soon as it differs from `since`, or
   * `'timeout'` after `timeoutMs` without a change.
   */
  async waitActivity(
    type: string,
    since: Versionstamp | undefined,
    timeoutMs: number,
  ): Promise<{ versionstamp: Versionstamp | undefined } | 'timeout'> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const { versionstamp, watch } = await this.#jobs.watchActivity(type);
      if (versionstamp !== since) {
        watch.cancel();
        return { versionstamp };
      }
      const remaining = deadline - performance.now();
      if (remaining <= 0) {
        watch.cancel();
        return 'timeout';
      }
      let timer: NodeJS.Timeout | undefined;
      const fired = await Promise.race([
        watch.promise.then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), Math.min(remaining, MAX_TIMER_MS));
        }),
      ]);
      clearTimeout(timer);
      watch.cancel();
      if (!fired && performance.now() >= deadline) return 'timeout';
    }
  }

  /** Re-enqueues running jobs not updated after `since`; resolves with their ids. */
  reEnqueueInactive(type: string, since: Versionstamp): Promise<string[]> {
    return this.#jobs.reEnqueueInactive(type, since);
  }

  /**
   * Everything a notifier needs per wake-up: the activity stamp, which of
   * `ids` were accepted or updated in a commit after the one of `since`, and
   * each one's state and data. The stamp is read first, so the states always
   * reflect its commit: the next wake-up, asking from this stamp, does not
   * report that commit's updates again.
   */
  async notifierSnapshot(type: string, ids: string[], since: Versionstamp | undefined): Promise<NotifierSnapshot> {
    const [versionstamp, active, states] = await Promise.all([
      this.#jobs.getActivityVersionstamp(type),
      since === undefined ? Promise.resolve([] as string[]) : this.#jobs.getActiveSince(type, nextCommit(since)),
      this.#jobs.getJobStates(type, ids),
    ]);
    const wanted = new Set(ids);
    return {
      versionstamp,
      active: active.filter((id) => wanted.has(id)),
      jobs: states.map((job) => ({ id: job.id, state: job.state ?? 'not_found', data: job.data })),
    };
  }
}

/**
 * The smallest versionstamp of a later commit than `stamp`'s: its 10-byte
 * commit part (version and batch order) plus one, user version zero. The
 * jobs API's `getActiveSince` counts the whole commit of its stamp.
 */
export function nextCommit(stamp: Versionstamp): Versionstamp {
  const commit = BigInt(`0x${stamp.slice(0, 20)}`) + 1n;
  return `${commit.toString(16).padStart(20, '0')}0000`;
}
