// `app.system`: the app's actor system as its users reach it: names, kills
// (fault injection), the live tree, monitors, mailboxes, and actors and
// supervisors of their own under user_sup.

import type { ActorDefinition, ActorId, ActorRef, ActorSystem, ExitReason, Inbox, InboxOptions, SpawnOptions, ThreadId } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import { type ChildSpec, Supervisor, type SupervisorSpec, actorStart, supervisorChild } from '@jobtree/supervisor';
import type { LiveTree, TreeNode } from './live-tree.js';
import type { UserChildren } from './user-children.js';

/** The app's actor system, as `app.system` offers it. */
export interface JobsAppSystem {
  /** The actor registered under `name` now; it changes when the actor restarts. */
  whereis(name: string): ActorId | undefined;
  /** Kills an actor abruptly and untrappably (fault injection); resolves once it is dead. */
  kill(target: string | ActorRef | ActorId): Promise<void>;
  /** The live supervision tree: every place, the actor in it, its thread and restarts. */
  tree(): TreeNode;
  /** Resolves with the reason when the actor ends. */
  monitor(target: string | ActorRef | ActorId): Promise<ExitReason>;
  /** A mailbox for main-thread code (see @jobtree/actors). */
  inbox<Msg = unknown>(options?: InboxOptions): Inbox<Msg>;
  /** The host threads alive now. */
  threads(): ThreadId[];
  cast<M>(to: ActorRef<M> | string, msg: M): void;
  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R>;
  /**
   * Starts one of your actors under `user_sup` (a permanent child unless the
   * spec says otherwise); it is stopped when the app closes.
   */
  startChild(spec: ChildSpec): Promise<ActorRef | undefined>;
  /** Starts an actor definition under `user_sup` with the id `options.name ?? id`. */
  startActor<M, A>(id: string, definition: ActorDefinition<M, A>, args: A, options?: Omit<SpawnOptions, 'link' | 'monitor'>): Promise<ActorRef<M>>;
  /** Starts a supervisor of yours under `user_sup`. */
  startSupervisor(id: string, spec: SupervisorSpec): Promise<Supervisor>;
  /** Stops a child of `user_sup` for good: it is not started again when `user_sup` restarts. */
  stopChild(id: string): Promise<void>;
  /**
   * A handle on `user_sup` (whichChildren, terminateChild, …). Children
   * started through the app are started again when `user_sup` restarts
   * (with `core`, or killed); use `stopChild` to end one for good.
   */
  userSupervisor(): Supervisor;
  /** The runtime itself, for everything else. */
  readonly actors: ActorSystem;
}

/** `app.system` over the app's actors, its live tree and the children it keeps for user_sup. */
export function appSystem(actors: ActorSystem, tree: LiveTree, userChildren: UserChildren): JobsAppSystem {
  return {
    actors,
    whereis: (name) => actors.whereis(name),
    kill: async (target) => {
      const id = typeof target === 'string' ? (actors.whereis(target) ?? target) : typeof target === 'object' ? target.id : target;
      const dead = actors.monitor(id);
      actors.kill(id);
      await dead;
    },
    tree: () => tree.snapshot(),
    monitor: (target) => actors.monitor(target),
    inbox: (options) => actors.inbox(options),
    threads: () => actors.threads(),
    cast: (to, msg) => actors.cast(to, msg),
    call: (to, msg, timeoutMs) => actors.call(to, msg, timeoutMs),
    startChild: (spec) => userChildren.start(spec),
    stopChild: (id) => userChildren.stop(id),
    userSupervisor: () => userChildren.supervisor(),
    startActor: async <M, A>(id: string, definition: ActorDefinition<M, A>, args: A, options?: Omit<SpawnOptions, 'link' | 'monitor'>) => {
      const ref = await userChildren.start({ id, start: actorStart(definition, args, options) });
      if (ref === undefined) throw new JobsError('not_found', `actor ${id} did not start`);
      return ref as ActorRef<M>;
    },
    startSupervisor: async (id, spec) => {
      const child = supervisorChild(id, spec);
      const ref = await userChildren.start(child);
      if (ref === undefined) throw new JobsError('not_found', `supervisor ${id} did not start`);
      return new Supervisor(actors, ref, child.events);
    },
  };
}
