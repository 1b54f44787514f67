// The children started under user_sup through the app: your actors and
// supervisors (`app.system.startChild`, `startActor`, `startSupervisor`) and
// the processors of `app.process`. Their specs are kept by id, in start
// order, and user_sup starts them again whenever it restarts (killed, or with
// core), where OTP would forget the children added with start_child.

import type { ActorRef, ActorSystem } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import { type ChildSpec, Supervisor, createSupervisorEvents } from '@jobtree/supervisor';
import { SYSTEM_NAMES } from './jobs-tree.js';

export class UserChildren {
  readonly #actors: ActorSystem;
  readonly #checkOpen: () => void;
  readonly #specs = new Map<string, ChildSpec>();

  /** @param checkOpen throws when the app is closed or stopped */
  constructor(actors: ActorSystem, checkOpen: () => void) {
    this.#actors = actors;
    this.#checkOpen = checkOpen;
  }

  /** The children a (re)starting user_sup starts, in start order. */
  specs(): ChildSpec[] {
    return [...this.#specs.values()];
  }

  /** A handle on the running user_sup; JobsError `closed` when it (or the app) is not running. */
  supervisor(): Supervisor {
    this.#checkOpen();
    const id = this.#actors.whereis(SYSTEM_NAMES.user);
    if (id === undefined) throw new JobsError('closed', 'user_sup is not running');
    return new Supervisor(this.#actors, id, createSupervisorEvents());
  }

  /** Starts a child under user_sup and keeps its spec unless it is temporary. */
  async start(spec: ChildSpec): Promise<ActorRef | undefined> {
    const ref = await this.supervisor().startChild(spec);
    if (spec.restart !== 'temporary') this.#specs.set(spec.id, spec);
    return ref;
  }

  /** Stops a child for good: user_sup does not start it again. */
  async stop(id: string): Promise<void> {
    const sup = this.supervisor();
    this.#specs.delete(id);
    await sup.terminateChild(id);
    await sup.deleteChild(id).catch(() => {});
  }
}
