// The public types of @jobtree/supervisor (OTP's supervisor), in one place.

import type { ActorContext, ActorDefinition, ActorId, ActorRef, ExitReason, SpawnOptions } from '@jobtree/actors';
import type { EventEmitter } from 'eventemitter3';

/**
 * How a supervisor reacts when a child it should restart ends:
 * - `one_for_one`: restart that child only.
 * - `one_for_all`: terminate all other children (reverse start order), then start all again in start order.
 * - `rest_for_one`: terminate the children started after it (reverse start order), then restart it and them in start order.
 * - `simple_one_for_one`: like one_for_one, for many dynamic children made from one template spec.
 */
export type Strategy = 'one_for_one' | 'one_for_all' | 'rest_for_one' | 'simple_one_for_one';

/**
 * - `permanent`: always restarted.
 * - `transient`: restarted only after an abnormal exit (anything but `normal`, `shutdown`, `{ shutdown }`).
 * - `temporary`: never restarted, not even when a one_for_all/rest_for_one sibling makes the others restart;
 *   its spec is dropped once its process ends.
 */
export type RestartType = 'permanent' | 'transient' | 'temporary';

/**
 * How a child is terminated by its supervisor:
 * - `brutal_kill`: `kill` at once (untrappable).
 * - a number of milliseconds: exit signal `shutdown`, then `kill` if the child is still alive after that long.
 * - `infinity`: exit signal `shutdown`, and wait as long as it takes (the usual choice for child supervisors).
 */
export type Shutdown = 'brutal_kill' | 'infinity' | number;

export type ChildType = 'worker' | 'supervisor';

/**
 * When a supervisor shuts itself down because significant children ended on their own (OTP's auto_shutdown):
 * - `never`: it does not; no child may be significant.
 * - `any_significant`: when any significant child ends on its own and is not restarted.
 * - `all_significant`: when the last significant child that had a process ends on its own and is not restarted.
 * A significant child "ends" when it is transient and exits normally (`normal`, `shutdown`, `{ shutdown }`), or is
 * temporary and exits with any reason. A child the supervisor itself terminates (terminateChild, a one_for_all or
 * rest_for_one cascade, its own shutdown) never triggers it.
 */
export type AutoShutdown = 'never' | 'any_significant' | 'all_significant';

/** Spawn options for a child; the supervisor always links the child itself. */
export type ChildSpawnOptions = Omit<SpawnOptions, 'link' | 'monitor'>;

/**
 * Any actor definition. A child spec erases the definition's message and args types (children of one
 * supervisor differ); `actorStart(actor, args)` checks args against the definition.
 */
export type AnyActorDefinition = Pick<ActorDefinition<unknown, unknown>, 'module'> & { readonly behaviour: object };

/** Start a child by spawning an actor definition. */
export interface ActorStart {
  actor: AnyActorDefinition;
  /**
   * The child's `init` args. For a simple_one_for_one template, `startChild(args)` supplies them
   * instead, and these are used when `startChild()` is called without args.
   */
  args?: unknown;
  options?: ChildSpawnOptions;
}

/**
 * Start a child with code of your own. It runs inside the supervisor actor with the supervisor's
 * context: spawn the child with `{ link: true }` so it is linked before it runs (the supervisor also
 * links the returned ref). Return `'ignore'` to start no process: the spec is kept without one
 * (OTP's `ignore`). A rejection is a start failure. `args` is what `startChild(args)` passed
 * (simple_one_for_one), else undefined.
 */
export type ChildStartFunction = (ctx: ActorContext<unknown>, args: unknown) => Promise<ActorRef | 'ignore'>;

export interface ChildSpec {
  /** Unique among the supervisor's children. */
  id: string;
  start: ActorStart | ChildStartFunction;
  /** @default 'permanent' */
  restart?: RestartType;
  /** @default 5000 for a worker, 'infinity' for a supervisor */
  shutdown?: Shutdown;
  /** @default 'worker' */
  type?: ChildType;
  /**
   * Counts for the supervisor's `autoShutdown`. Only for a transient or temporary child, and only under a
   * supervisor whose `autoShutdown` is not `never`; anything else is `invalid_spec`.
   * @default false
   */
  significant?: boolean;
}

/** A child spec with every default filled in, as `getChildspec` answers it (OTP's get_childspec). */
export interface ResolvedChildSpec {
  readonly id: string;
  readonly start: ActorStart | ChildStartFunction;
  readonly restart: RestartType;
  readonly shutdown: Shutdown;
  readonly type: ChildType;
  readonly significant: boolean;
}

export interface SupervisorSpec {
  strategy: Strategy;
  /**
   * More than `intensity` restarts within `period` milliseconds make the supervisor terminate all its
   * children and exit with reason `shutdown`.
   * @default 1
   */
  intensity?: number;
  /**
   * The sliding window for `intensity`, in milliseconds.
   * @default 5000
   */
  period?: number;
  /**
   * Shut this supervisor down (reason `shutdown`) when significant children end. Not for simple_one_for_one.
   * @default 'never'
   */
  autoShutdown?: AutoShutdown;
  /** Started in this order. For simple_one_for_one: exactly one template spec, started by `startChild(args)`. */
  children: ChildSpec[];
}

/** One line of `whichChildren()`, or the answer of `whichChild(idOrActor)`. */
export interface ChildInfo {
  /** The spec id (for simple_one_for_one: the template's id). */
  id: string;
  /** The running process, `'restarting'` while a failed restart is retried, or undefined when none. */
  actor: ActorId | 'restarting' | undefined;
  type: ChildType;
  restart: RestartType;
}

/** `countChildren()`, as OTP's count_children. */
export interface ChildCounts {
  /** Child specs, with or without a process (1 for simple_one_for_one). */
  specs: number;
  /** Children with a running process. */
  active: number;
  /** Specs (dynamic children for simple_one_for_one) of type supervisor. */
  supervisors: number;
  /** Specs (dynamic children for simple_one_for_one) of type worker. */
  workers: number;
}

export interface ChildStartedEvent {
  id: string;
  actor: ActorId;
  type: ChildType;
}

export interface ChildExitedEvent {
  id: string;
  actor: ActorId;
  reason: ExitReason;
  /** true when the supervisor terminated it (terminateChild, a restart cascade, its own shutdown). */
  terminated: boolean;
}

export interface ChildRestartedEvent {
  id: string;
  actor: ActorId;
  /** The process it replaces (undefined after a failed restart attempt). */
  previous: ActorId | undefined;
}

export interface IntensityReachedEvent {
  restarts: number;
  intensity: number;
  period: number;
}

/** The supervisor shuts itself down because of a significant child's end (see AutoShutdown). */
export interface AutoShutdownEvent {
  /** The significant child whose end triggered it. */
  id: string;
  actor: ActorId;
  reason: ExitReason;
  autoShutdown: Exclude<AutoShutdown, 'never'>;
}

export interface SupervisorEventTypes {
  child_started: (event: ChildStartedEvent) => void;
  child_exited: (event: ChildExitedEvent) => void;
  child_restarted: (event: ChildRestartedEvent) => void;
  intensity_reached: (event: IntensityReachedEvent) => void;
  auto_shutdown: (event: AutoShutdownEvent) => void;
}

export type SupervisorEvents = EventEmitter<SupervisorEventTypes>;
