// The core's handles on the database. The `core` child of the tree attaches
// a bridge over a fresh `Jobs` handle each time it restarts; the main
// thread's calls use the newest handle and never wait for a restarting core,
// and a killed core's handle keeps serving the calls already running on it
// until the app ends.

import type { ActorSystem } from '@jobtree/actors';
import type { Database, Jobs, JobsClock, StoreSharing } from '@jobtree/core';
import type { JobActivity } from '../admin/job-activity.js';
import { observedJobs, observedSharedJobs } from '../admin/observed-jobs.js';
import type { CoreServerArgs } from './core-server.js';
import { ActorSubscriptionRelay } from './actor-subscription-relay.js';
import { JobsBridge } from './jobs-bridge.js';
import { RecentExits } from './recent-exits.js';

/** What the app's handles run on: a database, or an embedded store shared with other processes. */
export type CoreStore = { database: Database } | { sharing: StoreSharing };

export class CoreHandles {
  readonly #store: CoreStore;
  /** Actors' subscriptions through the owner of a shared store, while this process is its client. */
  readonly #relay: ActorSubscriptionRelay | undefined;
  readonly #activity: JobActivity;
  readonly #actors: ActorSystem;
  readonly #closing: () => boolean;
  readonly #clock: JobsClock;
  /** Every handle ever made, closed when the app ends. */
  readonly #all = new Set<Jobs>();
  readonly #bridges = new Set<JobsBridge>();
  /** The actors' deaths, for every bridge, including one attached after a death (a core restarting meanwhile). */
  readonly #exits = new RecentExits();
  #current: Jobs;

  /**
   * @param closing whether the app is closing: a bridge withdrawn then closes its handle
   * @param clock the app's clock, which the handles' rate limits count on
   */
  constructor(store: CoreStore, activity: JobActivity, actors: ActorSystem, closing: () => boolean, clock: JobsClock) {
    this.#clock = clock;
    this.#store = store;
    this.#relay = 'sharing' in store ? new ActorSubscriptionRelay(actors, store.sharing) : undefined;
    this.#activity = activity;
    this.#actors = actors;
    this.#closing = closing;
    this.#current = this.#newHandle();
    actors.events.on('exited', (event) => {
      this.#exits.add(event.id);
      for (const bridge of this.#bridges) bridge.ownerExited(event.id);
    });
  }

  /** The newest handle, the one the main thread's calls use. */
  get current(): Jobs {
    return this.#current;
  }

  /** What the `core` child does at its start and its stop. */
  readonly core: CoreServerArgs = {
    attach: () => {
      // A restarted core re-attaches to the database with a fresh handle.
      if (this.#bridges.size > 0) this.#current = this.#newHandle();
      const bridge = new JobsBridge(this.#current, undefined, this.#relay, this.#exits);
      this.#bridges.add(bridge);
      this.#actors.setCore(bridge);
      return bridge;
    },
    detach: async (bridge) => {
      this.#bridges.delete(bridge);
      this.#actors.setCore(undefined);
      if (!this.#closing()) return;
      await bridge.jobs.close();
    },
  };

  /** Closes every handle, in the order they were made. */
  async closeAll(): Promise<void> {
    this.#relay?.close();
    for (const handle of this.#all) await handle.close();
  }

  #newHandle(): Jobs {
    const handle = 'database' in this.#store ? observedJobs(this.#store.database, this.#activity, this.#clock) : observedSharedJobs(this.#store.sharing, this.#activity, this.#clock);
    this.#all.add(handle);
    return handle;
  }
}
