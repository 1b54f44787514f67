// The state of one supervisor and OTP's supervisor operations on it: its
// children (static ones in start order, or simple_one_for_one ones by
// ActorId), what it does when one exits (restart per restart type and
// strategy, within the restart intensity, or shut down automatically), and
// the calls of its handle. The actor around it is supervisor-actor.ts.

import type { ActorContext, ActorId, ExitMessage, ExitReason } from '@jobtree/actors';
import { shutdownChild, shutdownChildren } from './child-shutdown.js';
import { type StartOutcome, startChildProcess, startFailure, staticArgs } from './child-start.js';
import { SupervisorError, type SupervisorErrorData } from './errors.js';
import { needsRestart } from './exit-reason.js';
import type {
  AutoShutdown,
  ChildCounts,
  ChildInfo,
  ResolvedChildSpec,
  SupervisorEventTypes,
  SupervisorEvents,
} from './interfaces.js';
import { RestartIntensity } from './restart-intensity.js';
import { type CheckedChildSpec, type CheckedSupervisorSpec, checkChildSpec } from './specs.js';
import { type SupervisorReply, type SupervisorRequest, fail, ok } from './supervisor-protocol.js';

type Context = ActorContext<SupervisorRequest>;

interface StaticChild {
  readonly spec: CheckedChildSpec;
  actor: ActorId | undefined;
  /** A restart failed and is being retried (OTP's `{restarting, Pid}`). */
  restarting: boolean;
}

interface DynamicChild {
  /** The running actor's id, or `restarting:<n>` while a failed restart is retried. */
  readonly key: string;
  readonly actor: ActorId | undefined;
  /** The process this one replaces, so terminateChild finds a child being restarted. */
  readonly previous: ActorId | undefined;
  readonly args: unknown;
}

export class SupervisorProcess {
  readonly #ctx: Context;
  readonly #spec: CheckedSupervisorSpec;
  readonly #events: SupervisorEvents;
  readonly #parent: ActorId | undefined;
  readonly #intensity: RestartIntensity;
  /** Static children in start order. */
  #children: StaticChild[] = [];
  /** simple_one_for_one children by key, in start order. */
  readonly #dynamic = new Map<string, DynamicChild>();
  #restartKeys = 0;

  constructor(ctx: Context, spec: CheckedSupervisorSpec, events: SupervisorEvents, parent: ActorId | undefined) {
    this.#ctx = ctx;
    this.#spec = spec;
    this.#events = events;
    this.#parent = parent;
    this.#intensity = new RestartIntensity(spec.intensity, spec.period);
  }

  get #simple(): boolean {
    return this.#spec.strategy === 'simple_one_for_one';
  }

  get #template(): CheckedChildSpec {
    return this.#spec.children[0] as CheckedChildSpec;
  }

  #emit<E extends keyof SupervisorEventTypes>(event: E, payload: Parameters<SupervisorEventTypes[E]>[0]): void {
    try {
      (this.#events.emit as (event: E, payload: unknown) => boolean)(event, payload);
    } catch (error) {
      // A listener's bug must not take the supervisor (and its children) down with it;
      // rethrown outside the handler, it still surfaces as an uncaught exception.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  // ---- starting ----

  #startProcess(spec: CheckedChildSpec, args: unknown): Promise<StartOutcome> {
    return startChildProcess(this.#ctx as unknown as ActorContext<unknown>, spec, args);
  }

  /** OTP's init_children: start in order; on a failure stop the started ones in reverse order. */
  async startChildren(): Promise<SupervisorErrorData | undefined> {
    if (this.#simple) return undefined;
    for (const spec of this.#spec.children) {
      const outcome = await this.#startProcess(spec, staticArgs(spec));
      if (!outcome.ok) {
        await this.#terminateInReverse(this.#children);
        this.#children = [];
        return startFailure(spec, outcome.reason);
      }
      if (outcome.actor === undefined && spec.restart === 'temporary') continue;
      this.#children.push({ spec, actor: outcome.actor, restarting: false });
      if (outcome.actor !== undefined) this.#emit('child_started', { id: spec.id, actor: outcome.actor, type: spec.type });
    }
    return undefined;
  }

  // ---- terminating ----

  /** Ends a static child's process (if any) per its shutdown spec; the spec stays. */
  async #terminate(child: StaticChild): Promise<void> {
    const actor = child.actor;
    child.actor = undefined;
    child.restarting = false;
    if (actor === undefined) return;
    const reason = await shutdownChild(this.#ctx, actor, child.spec.shutdown);
    this.#emit('child_exited', { id: child.spec.id, actor, reason, terminated: true });
  }

  /** OTP's terminate_children: reverse start order; temporary children are dropped, never restarted. */
  async #terminateInReverse(children: readonly StaticChild[]): Promise<void> {
    for (const child of [...children].reverse()) {
      await this.#terminate(child);
      if (child.spec.restart === 'temporary') this.#remove(child);
    }
  }

  async #terminateDynamic(): Promise<void> {
    const running = [...this.#dynamic.values()];
    this.#dynamic.clear();
    const actors = running.flatMap((child) => (child.actor === undefined ? [] : [child.actor]));
    await shutdownChildren(this.#ctx, actors, this.#template.shutdown, (actor, reason) => {
      this.#emit('child_exited', { id: this.#template.id, actor, reason, terminated: true });
    });
  }

  /** Everything this supervisor runs, before it ends. */
  async terminateAll(): Promise<void> {
    if (this.#simple) await this.#terminateDynamic();
    else await this.#terminateInReverse(this.#children);
  }

  #remove(child: StaticChild): void {
    this.#children = this.#children.filter((other) => other !== child);
  }

  // ---- restarting ----

  /** Too many restarts: stop everything and exit `shutdown`, which the parent sees (OTP). */
  async #giveUp(): Promise<void> {
    this.#emit('intensity_reached', {
      restarts: this.#intensity.count,
      intensity: this.#intensity.intensity,
      period: this.#intensity.period,
    });
    await this.terminateAll();
    this.#ctx.stop('shutdown');
  }

  #tryAgain(key: string): void {
    this.#ctx.cast(this.#ctx.self, { type: 'try_again_restart', key });
  }

  /** OTP's start_children within a restart: in start order; returns the child that failed, if one did. */
  async #startInOrder(
    children: readonly StaticChild[],
    previous: ReadonlyMap<StaticChild, ActorId | undefined>,
  ): Promise<StaticChild | undefined> {
    for (const child of children) {
      if (!this.#children.includes(child)) continue;
      const outcome = await this.#startProcess(child.spec, staticArgs(child.spec));
      if (!outcome.ok) return child;
      child.restarting = false;
      if (outcome.actor === undefined) {
        if (child.spec.restart === 'temporary') this.#remove(child);
        continue;
      }
      child.actor = outcome.actor;
      const { id, type } = child.spec;
      this.#emit('child_started', { id, actor: outcome.actor, type });
      this.#emit('child_restarted', { id, actor: outcome.actor, previous: previous.get(child) });
    }
    return undefined;
  }

  async #restartStatic(child: StaticChild, previousActor: ActorId | undefined): Promise<void> {
    if (!this.#intensity.add()) {
      await this.#giveUp();
      return;
    }
    let cascade: StaticChild[];
    switch (this.#spec.strategy) {
      case 'rest_for_one':
        cascade = this.#children.slice(this.#children.indexOf(child));
        break;
      case 'one_for_all':
        cascade = [...this.#children];
        break;
      default:
        cascade = [child];
    }
    const previous = new Map<StaticChild, ActorId | undefined>(cascade.map((other) => [other, other.actor]));
    previous.set(child, previousActor);
    await this.#terminateInReverse(cascade.filter((other) => other !== child));
    const failed = await this.#startInOrder(cascade, previous);
    if (failed !== undefined) {
      failed.restarting = true;
      this.#tryAgain(failed.spec.id);
    }
  }

  async #restartDynamic(args: unknown, previous: ActorId | undefined): Promise<void> {
    if (!this.#intensity.add()) {
      await this.#giveUp();
      return;
    }
    const template = this.#template;
    const outcome = await this.#startProcess(template, args);
    if (outcome.ok && outcome.actor !== undefined) {
      this.#dynamic.set(outcome.actor, { key: outcome.actor, actor: outcome.actor, previous, args });
      this.#emit('child_started', { id: template.id, actor: outcome.actor, type: template.type });
      this.#emit('child_restarted', { id: template.id, actor: outcome.actor, previous });
    } else if (!outcome.ok) {
      const key = `restarting:${++this.#restartKeys}`;
      this.#dynamic.set(key, { key, actor: undefined, previous, args });
      this.#tryAgain(key);
    }
  }

  async tryAgainRestart(key: string): Promise<void> {
    if (this.#simple) {
      const child = this.#dynamic.get(key);
      if (child === undefined || child.actor !== undefined) return;
      this.#dynamic.delete(key);
      await this.#restartDynamic(child.args, child.previous);
      return;
    }
    const child = this.#children.find((other) => other.spec.id === key);
    // Terminated or deleted in the meantime: nothing to retry.
    if (child === undefined || !child.restarting) return;
    await this.#restartStatic(child, undefined);
  }

  /** A trapped EXIT: from the parent it ends this supervisor; from a child it may restart it. */
  async onExit(msg: ExitMessage): Promise<void> {
    if (msg.from === this.#parent) {
      await this.terminateAll();
      this.#ctx.stop(msg.reason);
      return;
    }
    if (this.#simple) {
      const child = this.#dynamic.get(msg.from);
      if (child === undefined) return;
      this.#dynamic.delete(msg.from);
      this.#emit('child_exited', { id: this.#template.id, actor: msg.from, reason: msg.reason, terminated: false });
      if (needsRestart(this.#template.restart, msg.reason)) {
        await this.#restartDynamic(child.args, msg.from);
      }
      return;
    }
    // Unknown senders are ignored, as in OTP: an EXIT of a child already replaced, or of a linked stranger.
    const child = this.#children.find((other) => other.actor === msg.from);
    if (child === undefined) return;
    child.actor = undefined;
    this.#emit('child_exited', { id: child.spec.id, actor: msg.from, reason: msg.reason, terminated: false });
    if (needsRestart(child.spec.restart, msg.reason)) {
      await this.#restartStatic(child, msg.from);
      return;
    }
    if (child.spec.restart === 'temporary') this.#remove(child);
    const rule = this.#autoShutdownDue(child);
    if (rule !== undefined) await this.#autoShutdown(rule, child, msg.from, msg.reason);
  }

  // ---- automatic shutdown ----

  /**
   * OTP's do_auto_shutdown, asked only when a child ended on its own and is not restarted: the rule
   * that makes this end the supervisor, if one does. A child being restarted after a failed start
   * still counts as alive.
   */
  #autoShutdownDue(child: StaticChild): Exclude<AutoShutdown, 'never'> | undefined {
    const rule = this.#spec.autoShutdown;
    if (rule === 'never' || !child.spec.significant) return undefined;
    if (rule === 'any_significant') return rule;
    const alive = this.#children.some((other) => other.spec.significant && (other.actor !== undefined || other.restarting));
    return alive ? undefined : rule;
  }

  /** Stops everything and exits `shutdown`: a transient parent spec then leaves this supervisor down. */
  async #autoShutdown(
    autoShutdown: Exclude<AutoShutdown, 'never'>,
    child: StaticChild,
    actor: ActorId,
    reason: ExitReason,
  ): Promise<void> {
    this.#emit('auto_shutdown', { id: child.spec.id, actor, reason, autoShutdown });
    await this.terminateAll();
    this.#ctx.stop('shutdown');
  }

  // ---- operations ----

  async startChild(payload: unknown): Promise<SupervisorReply<ActorId | undefined>> {
    if (this.#simple) {
      const template = this.#template;
      const args = payload === undefined ? staticArgs(template) : payload;
      const outcome = await this.#startProcess(template, args);
      if (!outcome.ok) return fail(startFailure(template, outcome.reason));
      if (outcome.actor === undefined) return ok(undefined);
      // Temporary children are never restarted, so their args need not be kept (as OTP).
      const kept = template.restart === 'temporary' ? undefined : args;
      this.#dynamic.set(outcome.actor, { key: outcome.actor, actor: outcome.actor, previous: undefined, args: kept });
      this.#emit('child_started', { id: template.id, actor: outcome.actor, type: template.type });
      return ok(outcome.actor);
    }
    let spec: CheckedChildSpec;
    try {
      spec = checkChildSpec(payload, this.#spec.autoShutdown);
    } catch (error) {
      if (error instanceof SupervisorError) return fail(error.toData());
      throw error;
    }
    const existing = this.#children.find((child) => child.spec.id === spec.id);
    if (existing?.actor !== undefined) {
      return fail({
        code: 'already_started',
        message: `child '${spec.id}' is already running`,
        childId: spec.id,
        actor: existing.actor,
      });
    }
    if (existing !== undefined) {
      return fail({ code: 'already_present', message: `a spec with id '${spec.id}' is already present`, childId: spec.id });
    }
    const outcome = await this.#startProcess(spec, staticArgs(spec));
    if (!outcome.ok) return fail(startFailure(spec, outcome.reason));
    if (outcome.actor === undefined && spec.restart === 'temporary') return ok(undefined);
    this.#children.push({ spec, actor: outcome.actor, restarting: false });
    if (outcome.actor !== undefined) this.#emit('child_started', { id: spec.id, actor: outcome.actor, type: spec.type });
    return ok(outcome.actor);
  }

  /** A simple_one_for_one child by its ActorId, or by the ActorId it had while a failed restart is retried. */
  #findDynamic(actor: string): DynamicChild | undefined {
    return (
      this.#dynamic.get(actor) ??
      [...this.#dynamic.values()].find((other) => other.actor === undefined && other.previous === actor)
    );
  }

  /**
   * Static children are found by spec id only: an ActorId names no spec, so it is `not_found`, as OTP's
   * terminate_child/get_childspec answer a pid on a supervisor that is not simple_one_for_one.
   */
  #findStatic(target: string, byActor: boolean): StaticChild | SupervisorErrorData {
    const child = byActor ? undefined : this.#children.find((other) => other.spec.id === target);
    if (child !== undefined) return child;
    const message = byActor
      ? `no child '${target}': a ${this.#spec.strategy} supervisor names its children by spec id, not ActorId`
      : `no child '${target}'`;
    return { code: 'not_found', message };
  }

  #notFoundDynamic(operation: string, target: string, byActor: boolean): SupervisorErrorData {
    if (!byActor && target === this.#template.id) {
      return {
        code: 'simple_one_for_one',
        message: `a simple_one_for_one supervisor's ${operation} takes a child's ActorId, not the spec id`,
        childId: target,
      };
    }
    return { code: 'not_found', message: `no child ${target}` };
  }

  async terminateChild(target: string, byActor: boolean): Promise<SupervisorReply<undefined>> {
    if (this.#simple) {
      const child = this.#findDynamic(target);
      if (child === undefined) return fail(this.#notFoundDynamic('terminateChild', target, byActor));
      this.#dynamic.delete(child.key);
      if (child.actor !== undefined) {
        const reason = await shutdownChild(this.#ctx, child.actor, this.#template.shutdown);
        this.#emit('child_exited', { id: this.#template.id, actor: child.actor, reason, terminated: true });
      }
      return ok(undefined);
    }
    const child = this.#findStatic(target, byActor);
    if (!('spec' in child)) return fail(child);
    await this.#terminate(child);
    if (child.spec.restart === 'temporary') this.#remove(child);
    return ok(undefined);
  }

  #simpleOneForOne(operation: string, id: string): SupervisorReply<never> {
    return fail({
      code: 'simple_one_for_one',
      message: `${operation} does not apply to a simple_one_for_one supervisor`,
      childId: id,
    });
  }

  #findStopped(id: string): StaticChild | SupervisorErrorData {
    const child = this.#children.find((other) => other.spec.id === id);
    if (child === undefined) return { code: 'not_found', message: `no child '${id}'`, childId: id };
    if (child.restarting) return { code: 'restarting', message: `child '${id}' is being restarted`, childId: id };
    if (child.actor !== undefined) {
      return { code: 'running', message: `child '${id}' is running`, childId: id, actor: child.actor };
    }
    return child;
  }

  async restartChild(id: string): Promise<SupervisorReply<ActorId | undefined>> {
    if (this.#simple) return this.#simpleOneForOne('restartChild', id);
    const child = this.#findStopped(id);
    if (!('spec' in child)) return fail(child);
    const outcome = await this.#startProcess(child.spec, staticArgs(child.spec));
    if (!outcome.ok) return fail(startFailure(child.spec, outcome.reason));
    child.actor = outcome.actor;
    if (outcome.actor !== undefined) {
      this.#emit('child_started', { id, actor: outcome.actor, type: child.spec.type });
    }
    return ok(outcome.actor);
  }

  deleteChild(id: string): SupervisorReply<undefined> {
    if (this.#simple) return this.#simpleOneForOne('deleteChild', id);
    const child = this.#findStopped(id);
    if (!('spec' in child)) return fail(child);
    this.#remove(child);
    return ok(undefined);
  }

  /**
   * OTP's get_childspec. simple_one_for_one: the template's id answers the template; a child's ActorId
   * answers the template with that child's args (undefined for a temporary child, whose args are not kept).
   */
  getChildspec(target: string, byActor: boolean): SupervisorReply<ResolvedChildSpec> {
    if (this.#simple) {
      const template = this.#template;
      const child = this.#findDynamic(target);
      if (child !== undefined) {
        if (typeof template.start === 'function') return ok({ ...template });
        return ok({ ...template, start: { ...template.start, args: child.args } });
      }
      if (!byActor && target === template.id) return ok({ ...template });
      return fail({ code: 'not_found', message: `no child ${target}` });
    }
    const child = this.#findStatic(target, byActor);
    return 'spec' in child ? ok({ ...child.spec }) : fail(child);
  }

  #dynamicInfo(child: DynamicChild): ChildInfo {
    const { id, type, restart } = this.#template;
    return { id, actor: child.actor ?? 'restarting', type, restart };
  }

  #staticInfo(child: StaticChild): ChildInfo {
    return {
      id: child.spec.id,
      actor: child.restarting ? 'restarting' : child.actor,
      type: child.spec.type,
      restart: child.spec.restart,
    };
  }

  /**
   * One line of which_children without listing them all. A static child is found by spec id, or by
   * the ActorId it runs as (which child is this actor?); a simple_one_for_one child by its ActorId.
   */
  whichChild(target: string, byActor: boolean): SupervisorReply<ChildInfo> {
    if (this.#simple) {
      const child = this.#findDynamic(target);
      return child === undefined ? fail(this.#notFoundDynamic('whichChild', target, byActor)) : ok(this.#dynamicInfo(child));
    }
    const child = this.#children.find((other) => (byActor ? other.actor === target : other.spec.id === target));
    if (child !== undefined) return ok(this.#staticInfo(child));
    return fail({ code: 'not_found', message: `no child ${byActor ? 'running as ' : ''}'${target}'` });
  }

  whichChildren(): ChildInfo[] {
    if (this.#simple) return [...this.#dynamic.values()].map((child) => this.#dynamicInfo(child));
    return this.#children.map((child) => this.#staticInfo(child));
  }

  countChildren(): ChildCounts {
    if (this.#simple) {
      const all = this.#dynamic.size;
      const active = [...this.#dynamic.values()].filter((child) => child.actor !== undefined).length;
      const supervisors = this.#template.type === 'supervisor' ? all : 0;
      return { specs: 1, active, supervisors, workers: all - supervisors };
    }
    const supervisors = this.#children.filter((child) => child.spec.type === 'supervisor').length;
    return {
      specs: this.#children.length,
      active: this.#children.filter((child) => child.actor !== undefined).length,
      supervisors,
      workers: this.#children.length - supervisors,
    };
  }
}
