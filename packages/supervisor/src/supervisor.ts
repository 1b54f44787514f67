// The public face of a supervisor: `startSupervisor` and the `Supervisor`
// handle, whose methods are OTP's supervisor API as calls to the supervisor
// actor, and `supervisorChild` to nest one supervisor under another.

import type { ActorContext, ActorDefinition, ActorId, ActorOperations, ActorRef, ActorSystem } from '@jobtree/actors';
import { describeReason } from '@jobtree/actors';
import { EventEmitter } from 'eventemitter3';
import { SupervisorError } from './errors.js';
import { reasonFromError } from './exit-reason.js';
import type {
  ActorStart,
  ChildCounts,
  ChildSpawnOptions,
  ChildInfo,
  ChildSpec,
  ResolvedChildSpec,
  RestartType,
  Shutdown,
  SupervisorEventTypes,
  SupervisorEvents,
  SupervisorSpec,
} from './interfaces.js';
import { checkChildSpec, checkStartSupervisorOptions, checkSupervisorChildOptions, checkSupervisorSpec } from './specs.js';
import supervisorActor, { type StartupReport } from './supervisor-actor.js';
import type { SupervisorReply, SupervisorRequest } from './supervisor-protocol.js';

// OTP calls its supervisor with timeout infinity: starting a child may take as long as the child's init.
import { MAX_TIMER_MS as CALL_TIMEOUT_MS } from '@jobtree/actors';

export interface StartSupervisorOptions {
  /** Register the supervisor under this name (`whereis`). */
  name?: string;
  /**
   * When `operations` is an actor's context: link the supervisor to that actor, which becomes its
   * parent (its EXIT shuts the supervisor down; the supervisor's exit reaches it).
   * @default false
   */
  link?: boolean;
  /**
   * The emitter for the supervisor's events; pass one to see the `child_started` events of startup,
   * which happen before `startSupervisor` resolves.
   * @default a new EventEmitter
   */
  events?: SupervisorEvents;
}

/** A handle on a running supervisor. Every method is a call to the supervisor actor. */
export class Supervisor {
  readonly ref: ActorRef<SupervisorRequest>;
  /** `child_started`, `child_exited`, `child_restarted`, `intensity_reached`, `auto_shutdown`. */
  readonly events: SupervisorEvents;
  readonly #operations: ActorOperations;

  /**
   * For a supervisor started by `startSupervisor` use the handle it returns. This constructor makes a
   * handle for a nested one: `new Supervisor(system, { id }, childSpec.events)`.
   */
  constructor(operations: ActorOperations, ref: ActorRef<SupervisorRequest> | ActorId, events: SupervisorEvents) {
    this.#operations = operations;
    this.ref = typeof ref === 'string' ? { id: ref } : ref;
    this.events = events;
  }

  async #request<T>(msg: SupervisorRequest): Promise<T> {
    let reply: SupervisorReply<T>;
    try {
      reply = await this.#operations.call<SupervisorReply<T>, SupervisorRequest>(this.ref, msg, CALL_TIMEOUT_MS);
    } catch (error) {
      const reason = reasonFromError(error);
      throw new SupervisorError({
        code: 'noproc',
        message: `supervisor ${this.ref.id} did not answer ${msg.type}: ${describeReason(reason)}`,
        reason,
      });
    }
    if (!reply.ok) throw new SupervisorError(reply.error);
    return reply.value;
  }

  /**
   * OTP's start_child. For a simple_one_for_one supervisor pass the new child's args (undefined: the
   * template's args); otherwise a child spec, started after the existing children. Resolves with the
   * child, or undefined when its start function returned `'ignore'`.
   * @throws SupervisorError `already_started`, `already_present`, `start_failed`, `invalid_spec`
   */
  async startChild(specOrArgs?: ChildSpec | unknown): Promise<ActorRef | undefined> {
    const actor = await this.#request<ActorId | undefined>({ type: 'start_child', child: specOrArgs });
    return actor === undefined ? undefined : { id: actor };
  }

  /**
   * OTP's terminate_child: ends the child's process per its shutdown spec. The spec is kept (restart it
   * with `restartChild`) unless the child is temporary. simple_one_for_one: pass the child's ActorId or
   * ref, and the child is gone for good. Any other strategy: pass the spec id; a ref answers `not_found`,
   * as OTP answers a pid there (find the id with `whichChild(ref)`).
   * @throws SupervisorError `not_found`, `simple_one_for_one`
   */
  async terminateChild(idOrActor: string | ActorRef): Promise<void> {
    await this.#request<undefined>({ type: 'terminate_child', ...target(idOrActor) });
  }

  /**
   * OTP's restart_child: starts the process of a kept spec that has none.
   * @throws SupervisorError `running`, `restarting`, `not_found`, `start_failed`, `simple_one_for_one`
   */
  async restartChild(id: string): Promise<ActorRef | undefined> {
    const actor = await this.#request<ActorId | undefined>({ type: 'restart_child', id });
    return actor === undefined ? undefined : { id: actor };
  }

  /**
   * OTP's delete_child: forgets a spec that has no process.
   * @throws SupervisorError `running`, `restarting`, `not_found`, `simple_one_for_one`
   */
  async deleteChild(id: string): Promise<void> {
    await this.#request<undefined>({ type: 'delete_child', id });
  }

  /**
   * OTP's get_childspec: the child's spec with its defaults filled in. Found as `terminateChild` finds
   * a child: by spec id, or for simple_one_for_one by the child's ActorId or ref (the template, with
   * that child's args) or the template's id (the template). The reply holds the spec's functions and
   * actor definitions, so call it from the main thread, where replies are not copied.
   * @throws SupervisorError `not_found`
   */
  getChildspec(idOrActor: string | ActorRef): Promise<ResolvedChildSpec> {
    return this.#request<ResolvedChildSpec>({ type: 'get_childspec', ...target(idOrActor) });
  }

  /**
   * One child's line of `whichChildren()`. A static child by spec id, or by a ref to the actor it runs
   * as; a simple_one_for_one child by its ActorId or ref.
   * @throws SupervisorError `not_found`, `simple_one_for_one` (the template's id: use `whichChildren()`)
   */
  whichChild(idOrActor: string | ActorRef): Promise<ChildInfo> {
    return this.#request<ChildInfo>({ type: 'which_child', ...target(idOrActor) });
  }

  /** OTP's which_children, in start order. */
  whichChildren(): Promise<ChildInfo[]> {
    return this.#request<ChildInfo[]>({ type: 'which_children' });
  }

  /** OTP's count_children. */
  countChildren(): Promise<ChildCounts> {
    return this.#request<ChildCounts>({ type: 'count_children' });
  }

  /** Terminates all children in reverse start order, then the supervisor (reason `shutdown`). */
  async stop(): Promise<void> {
    await this.#request<undefined>({ type: 'stop' });
  }
}

/** A string is a spec id (for simple_one_for_one also an ActorId); a ref is an actor. */
function target(idOrActor: string | ActorRef): { target: string; byActor: boolean } {
  return typeof idOrActor === 'string' ? { target: idOrActor, byActor: false } : { target: idOrActor.id, byActor: true };
}

/** A new emitter for supervisor events, e.g. for `startSupervisor(…, { events })`. */
export function createSupervisorEvents(): SupervisorEvents {
  return new EventEmitter<SupervisorEventTypes>();
}

function startFailure(error: unknown, startup: StartupReport): SupervisorError {
  if (startup.failure !== undefined) return new SupervisorError(startup.failure);
  const reason = reasonFromError(error);
  return new SupervisorError({ code: 'start_failed', message: `supervisor failed to start: ${describeReason(reason)}`, reason });
}

function isContext(operations: ActorOperations): operations is ActorContext<unknown> {
  return 'self' in operations && typeof (operations as { self?: unknown }).self === 'object';
}

/**
 * The system's own id when `operations` is the ActorSystem: a supervisor started from outside any actor has
 * the system as its parent, so `system.exit(sup, reason)` stops it as the parent's exit signal does in OTP.
 */
function systemId(operations: ActorOperations): ActorId | undefined {
  if (isContext(operations)) return undefined;
  const id = (operations as Partial<ActorSystem>).id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Starts a supervisor actor (main thread) and its children, in order. Rejects with SupervisorError
 * `invalid_spec` for a malformed spec, or `start_failed` (with the child's id and exit reason) when a
 * child fails to start; the children already started are then stopped in reverse order. Started from
 * the ActorSystem, the supervisor's parent is the system (`system.exit(sup.ref, reason)` stops it).
 */
export async function startSupervisor(
  operations: ActorOperations,
  spec: SupervisorSpec,
  options: StartSupervisorOptions = {},
): Promise<Supervisor> {
  checkStartSupervisorOptions(options);
  checkSupervisorSpec(spec);
  const events = options.events ?? createSupervisorEvents();
  const startup: StartupReport = {};
  const link = options.link === true && isContext(operations);
  const parent = link ? (operations as ActorContext<unknown>).self.id : systemId(operations);
  let ref: ActorRef<SupervisorRequest>;
  try {
    ref = await operations.spawn(
      supervisorActor,
      { spec, events, parent, startup },
      { placement: 'main', ...(options.name === undefined ? {} : { name: options.name }), ...(link ? { link } : {}) },
    );
  } catch (error) {
    throw startFailure(error, startup);
  }
  return new Supervisor(operations, ref, events);
}

export interface SupervisorChildOptions {
  /** @default 'permanent' */
  restart?: RestartType;
  /** @default 'infinity' */
  shutdown?: Shutdown;
  /**
   * Counts for the parent's `autoShutdown` (transient or temporary only). A nested supervisor with an
   * `autoShutdown` of its own, significant in its parent, takes the parent down with it.
   * @default false
   */
  significant?: boolean;
  /** Register the nested supervisor under this name (`whereis`); it moves to each restarted instance. */
  name?: string;
}

/** A child spec that starts a nested supervisor; `events` carries its events across its restarts. */
export interface SupervisorChildSpec extends ChildSpec {
  readonly type: 'supervisor';
  readonly events: SupervisorEvents;
}

/**
 * The child spec of a nested supervisor (OTP: a child of type supervisor). The spec is checked now,
 * so a mistake fails here rather than at the parent's startup. Pass a function to give the spec anew
 * at each (re)start, e.g. with the children started dynamically so far.
 */
export function supervisorChild(
  id: string,
  spec: SupervisorSpec | (() => SupervisorSpec),
  options: SupervisorChildOptions = {},
): SupervisorChildSpec {
  // A function gives the spec anew at every start: a restarted supervisor
  // then starts the children its owner keeps on record (OTP forgets the
  // children added with start_child when a supervisor restarts).
  checkSupervisorChildOptions(options);
  const specAtStart = typeof spec === 'function' ? spec : () => spec;
  checkSupervisorSpec(specAtStart());
  const events = createSupervisorEvents();
  const child: SupervisorChildSpec = {
    id,
    type: 'supervisor',
    events,
    restart: options.restart ?? 'permanent',
    shutdown: options.shutdown ?? 'infinity',
    significant: options.significant ?? false,
    async start(ctx) {
      const startup: StartupReport = {};
      const current = specAtStart();
      checkSupervisorSpec(current);
      try {
        return await ctx.spawn(
          supervisorActor,
          { spec: current, events, parent: ctx.self.id, startup },
          { placement: 'main', link: true, ...(options.name === undefined ? {} : { name: options.name }) },
        );
      } catch (error) {
        throw startFailure(error, startup);
      }
    },
  };
  checkChildSpec(child);
  return child;
}

/** A child's `start` with its args type-checked against the actor definition. */
export function actorStart<M, A>(actor: ActorDefinition<M, A>, args: A, options?: ChildSpawnOptions): ActorStart {
  return options === undefined ? { actor, args } : { actor, args, options };
}
