// One live actor: the loop that hands one message at a time from its
// mailbox (mailbox.ts) to its behaviour, its links and monitors, its timers,
// and how it ends (exit, kill). Its `ctx` is in cell-context.ts. Every
// failure ends this cell only.

import { CellContext, type ContextCell } from './cell-context.js';
import type { CellHost } from './cell-host.js';
import { ActorError, MalformedMessageError } from './errors.js';
import { envelope, Kind } from './envelope.js';
import { crashReason, errorInfo, isExitReason } from './exit-reason.js';
import { PROGRESS, RUNNING } from './host-status.js';
import { infoEntry, INFO, Mailbox, type MailboxEntry, NOT_RECEIVABLE } from './mailbox.js';
import { LongTimeout } from './max-timer.js';
import { type Then, thenOf, whenSettled } from './thenable.js';
import type { ActorContext, ActorId, Behaviour, CallResult, ExitReason, MonitorRef, SystemMessage, TimeoutMessage } from './interfaces.js';

type AnyBehaviour = Behaviour<unknown, unknown, unknown>;

/** The behaviour of a passive cell (an inbox): nothing runs, `receive` takes the mail. */
const NO_BEHAVIOUR: AnyBehaviour = { init: () => undefined };

/** Messages an actor handles in one turn of its thread's ready loop. */
const STEP_MESSAGES = 64;

export class ActorCell implements ContextCell {
  readonly id: ActorId;
  /** The serial part of the id: what the host publishes in its RUNNING slot while a handler of this actor runs. */
  readonly serial: number;
  readonly host: CellHost;
  readonly behaviour: AnyBehaviour;
  readonly ctx: ActorContext<unknown>;
  name: string | undefined;
  state: unknown;
  /** Actors linked to this one. */
  readonly links = new Set<ActorId>();
  /** Monitors this actor holds: ref -> target ('' while none is known: it is being spawned, or was not found and its DOWN is on its way). */
  readonly monitors = new Map<MonitorRef, ActorId>();
  /** Monitors on this actor: ref -> watcher. */
  readonly watchers = new Map<MonitorRef, ActorId>();
  /** Correlation numbers of this actor's calls still waiting for a reply. */
  readonly calls = new Set<number>();
  trapping = false;
  dead = false;
  /** In the host's ready queue. */
  queued = false;
  /** A handler (or init, or terminate) is running; the mailbox waits. */
  busy = true;
  /**
   * A mailbox without behaviour: the main thread's inbox. It never runs a
   * handler (it stays `busy`), only `receive` takes its messages, it traps
   * exits, and when it ends its pending receives resolve `undefined`.
   */
  readonly passive: boolean;

  readonly #mailbox = new Mailbox();
  #current: MailboxEntry | undefined;
  #timers = new Set<LongTimeout>();
  #stopReason: ExitReason | undefined;
  /** Inside step(): it reschedules at the end, settle need not. */
  #stepping = false;
  #dying = false;
  #initialized = false;
  #onStarted: ((id: ActorId, failure?: ExitReason) => void) | undefined;
  // Bound once per actor so that an async handler costs no closure per message.
  // An async handler resumes outside the ready loop: a kill that came meanwhile is taken first,
  // so that a killed actor sends no reply and starts nothing more (see kill-port.ts).
  readonly #onSettled = (value: unknown): void => {
    this.host.takeKills();
    this.#settle(value);
  };
  readonly #onRejected = (error: unknown): void => {
    this.host.takeKills();
    this.crash(error);
  };

  constructor(host: CellHost, id: ActorId, serial: number, behaviour: AnyBehaviour | undefined, name: string | undefined) {
    this.host = host;
    this.id = id;
    this.serial = serial;
    this.behaviour = behaviour ?? NO_BEHAVIOUR;
    this.name = name;
    this.ctx = new CellContext(this);
    this.passive = behaviour === undefined;
    if (this.passive) {
      this.trapping = true;
      this.#initialized = true;
    }
  }

  get hasMail(): boolean {
    return this.#mailbox.hasMail;
  }

  /** Runs init; `onStarted` hears the outcome before any other message is handled. */
  start(args: unknown, onStarted: (id: ActorId, failure?: ExitReason) => void): void {
    this.#onStarted = onStarted;
    let result: unknown;
    let then: Then | undefined;
    const outer = this.#enter();
    try {
      result = this.behaviour.init(args, this.ctx);
      // Inside the try: a `then` that throws (read or called) is init's failure, as its throw is.
      then = thenOf(result);
      if (then !== undefined) {
        whenSettled(
          result,
          then,
          (state) => this.#initDone(state),
          (error) => this.#initFailed(error),
        );
      }
    } catch (error) {
      this.#leave(outer);
      this.#initFailed(error);
      return;
    }
    this.#leave(outer);
    if (then === undefined) this.#initDone(result);
  }

  #initDone(state: unknown): void {
    if (this.dead) return;
    this.state = state;
    this.#initialized = true;
    const onStarted = this.#onStarted;
    this.#onStarted = undefined;
    onStarted?.(this.id);
    this.busy = false;
    if (this.#stopReason !== undefined) this.exit(this.#stopReason, true);
    else if (this.hasMail) this.host.schedule(this);
  }

  #initFailed(error: unknown): void {
    if (this.dead) return;
    // Like proc_lib's init_ack: the spawner hears first, then links and monitors.
    const reason = crashReason(error);
    const onStarted = this.#onStarted;
    this.#onStarted = undefined;
    onStarted?.(this.id, reason);
    this.#finalize(reason);
  }

  /** Adds a message; a waiting selective receive may take it at once. */
  deliver(env: MailboxEntry): void {
    if (this.dead) return;
    if (this.#mailbox.waiting && env.kind !== Kind.call) {
      // A receive that takes it resumes this actor's code: not once a kill for it has come.
      this.host.takeKills();
      if (this.dead) return;
      if (this.#mailbox.offer(env, (error) => this.#predicateThrew(error))) return;
    }
    this.#mailbox.push(env);
    if (!this.busy && !this.queued) this.host.schedule(this);
  }

  /**
   * A run of casts from one sender (`batch[start .. start + n)`), the hot path
   * of a cast stream: an idle actor with an empty mailbox handles them at
   * once, without queueing each one, until a handler goes async.
   */
  deliverCasts(batch: readonly unknown[], start: number, n: number, from: ActorId): void {
    if (this.dead) return;
    let i = start;
    const end = start + n;
    if (!this.#mailbox.waiting && !this.busy && !this.queued && !this.hasMail) {
      // One envelope serves the whole run: it is never queued, only seen as #current.
      const env = envelope(Kind.cast, this.id, from, 0, undefined);
      this.#stepping = true;
      const host = this.host;
      for (; i < end; i++) {
        // A kill from the main thread is taken between two handlers, however long the run (see kill-port.ts).
        host.takeKills();
        if (this.busy || this.dead) break;
        env.body = batch[i];
        this.#handle(env);
      }
      this.#stepping = false;
    }
    for (; i < end && !this.dead; i++) this.deliver(envelope(Kind.cast, this.id, from, 0, batch[i]));
    if (!this.busy && !this.dead && this.hasMail) this.host.schedule(this);
  }

  deliverInfo(msg: SystemMessage | TimeoutMessage): void {
    this.deliver(infoEntry(this.id, msg));
  }

  /**
   * Handles queued messages, up to a budget (so one busy actor cannot starve
   * the others on its thread). Called by the host's ready loop.
   */
  step(): void {
    this.#stepping = true;
    const host = this.host;
    for (let budget = STEP_MESSAGES; budget > 0 && this.hasMail; budget--) {
      host.takeKills();
      if (this.busy || this.dead) break;
      this.#handleNext();
    }
    this.#stepping = false;
    if (!this.busy && !this.dead && this.hasMail) this.host.schedule(this);
  }

  #handleNext(): void {
    const env = this.#mailbox.shift();
    if (env !== undefined) this.#handle(env);
  }

  /** Drops a `DOWN` with this monitor ref from the mailbox, if it has arrived (demonitor with flush). */
  flushDown(ref: MonitorRef): void {
    this.#mailbox.flushDown(ref);
  }

  #handle(env: MailboxEntry): void {
    this.#current = env;
    this.busy = true;
    let result: unknown;
    let then: Then | undefined;
    const outer = this.#enter();
    try {
      result = this.#dispatch(env);
      // Inside the try: a `then` that throws (read or called) crashes this actor, as the handler's throw does.
      then = thenOf(result);
      if (then !== undefined) whenSettled(result, then, this.#onSettled, this.#onRejected);
    } catch (error) {
      this.#leave(outer);
      this.crash(error);
      return;
    }
    this.#leave(outer);
    if (then === undefined) this.#settle(result);
  }

  /**
   * Publishes that a handler of this actor starts running synchronously (see
   * host-status.ts); returns what ran before, for a handler run from inside
   * another one (a terminate run by a kill in a handler).
   */
  #enter(): number {
    const status = this.host.status;
    const outer = status[RUNNING] as number;
    status[PROGRESS] = (status[PROGRESS] as number) + 1;
    status[RUNNING] = this.serial;
    return outer;
  }

  #leave(outer: number): void {
    this.host.status[RUNNING] = outer;
  }

  #dispatch(env: MailboxEntry): unknown {
    const behaviour = this.behaviour;
    switch (env.kind) {
      case Kind.cast:
        this.#checkShape(env.body, 'cast');
        if (behaviour.handleCast === undefined) throw new MalformedMessageError(`${this.id} has no handleCast for a cast message`);
        return behaviour.handleCast(env.body, this.state, this.ctx);
      case Kind.call:
        this.#checkShape(env.body, 'call');
        if (behaviour.handleCall === undefined) throw new MalformedMessageError(`${this.id} has no handleCall for a call message`);
        return behaviour.handleCall(env.body, this.state, this.ctx);
      case INFO:
        // OTP's gen_server logs an unexpected info message and carries on.
        if (behaviour.handleInfo === undefined) return undefined;
        return behaviour.handleInfo(env.body, this.state, this.ctx);
      default:
        throw new MalformedMessageError(`${this.id} got a message of unknown kind ${String((env as { kind: unknown }).kind)}`);
    }
  }

  #checkShape(msg: unknown, what: string): void {
    const isMessage = this.behaviour.isMessage;
    if (isMessage !== undefined && !isMessage(msg)) {
      throw new MalformedMessageError(`${this.id} rejected a ${what} message: ${preview(msg)}`);
    }
  }

  #settle(value: unknown): void {
    if (this.dead || this.#dying) return;
    const env = this.#current;
    if (env !== undefined && env.kind === Kind.call) {
      if (typeof value !== 'object' || value === null || !('reply' in value)) {
        this.crash(new ActorError('bad_return', `handleCall of ${this.id} must return { reply }, got ${preview(value)}`));
        return;
      }
      const result = value as CallResult<unknown>;
      this.host.send(Kind.reply, env.from, this.id, env.ref, result.reply);
      if (result.state !== undefined) this.state = result.state;
      if (result.stop !== undefined) this.#stopReason = result.stop;
    } else if (value !== undefined) {
      this.state = value;
    }
    this.#current = undefined;
    this.busy = false;
    if (this.#stopReason !== undefined) this.exit(this.#stopReason, true);
    else if (!this.#stepping && this.hasMail) this.host.schedule(this);
  }

  /** `ctx.stop`: at the end of the running handler, or now if none runs. */
  stop(reason: ExitReason): void {
    if (!isExitReason(reason)) throw new ActorError('bad_argument', `stop: not an exit reason: ${preview(reason)}`);
    if (this.busy) this.#stopReason = reason;
    else this.exit(reason, true);
  }

  crash(error: unknown): void {
    this.exit(crashReason(error), true);
  }

  /** An exit signal from a link (`viaLink`) or from `exit()`. */
  exitSignal(from: ActorId, reason: ExitReason, viaLink: boolean): void {
    if (this.dead) return;
    if (viaLink) {
      // After unlink, a signal already on its way is ignored (OTP unlink semantics).
      if (!this.links.delete(from)) return;
    }
    if (this.trapping) {
      this.deliverInfo({ type: 'EXIT', from, reason });
      return;
    }
    if (reason === 'normal') return;
    this.exit(reason, true);
  }

  /** Ends the actor: runs `terminate` when asked and defined, then tells links and monitors. */
  exit(reason: ExitReason, runTerminate: boolean): void {
    if (this.dead || this.#dying) return;
    // A kill that has come wins over this exit: terminate must not run.
    this.host.takeKills();
    if (this.dead) return;
    const terminate = this.behaviour.terminate;
    if (runTerminate && this.#initialized && terminate !== undefined) {
      this.#dying = true;
      this.busy = true;
      this.#mailbox.cancelReceivers(this.passive);
      let waiting = false;
      const outer = this.#enter();
      try {
        const result = terminate(reason, this.state, this.ctx);
        const then = thenOf(result);
        if (then !== undefined) {
          const finish = (): void => this.#finalize(reason);
          whenSettled(result, then, finish, finish);
          waiting = true;
        }
      } catch {
        // A terminate that throws, or whose `then` does, ends the actor with its reason all the same.
      }
      this.#leave(outer);
      if (waiting) return;
    }
    this.#finalize(reason);
  }

  /** Abrupt and untrappable: no terminate, pending work abandoned. */
  kill(): void {
    this.#finalize('killed');
  }

  #finalize(reason: ExitReason): void {
    if (this.dead) return;
    this.dead = true;
    this.busy = true;
    const onStarted = this.#onStarted;
    this.#onStarted = undefined;
    onStarted?.(this.id, reason);
    // A dead actor's pending receives never settle: its async work is abandoned. An inbox's
    // belong to main-thread code, which goes on: they resolve undefined.
    this.#mailbox.cancelReceivers(this.passive);
    for (const timer of this.#timers) timer.clear();
    this.#timers.clear();
    const host = this.host;
    host.forget(this);
    // Callers waiting on this actor hear its reason, like gen_server:call's monitor.
    const current = this.#current;
    if (current !== undefined && current.kind === Kind.call) host.send(Kind.callFailed, current.from, this.id, current.ref, reason);
    this.#mailbox.clear((env) => {
      if (env.kind === Kind.call) host.send(Kind.callFailed, env.from, this.id, env.ref, reason);
    });
    this.#current = undefined;
    for (const linked of this.links) host.send(Kind.linkExit, linked, this.id, 0, reason);
    this.links.clear();
    for (const [ref, watcher] of this.watchers) host.send(Kind.down, watcher, this.id, ref, reason);
    this.watchers.clear();
    for (const [ref, target] of this.monitors) if (target !== '') host.send(Kind.demonitor, target, this.id, ref, null);
    this.monitors.clear();
    host.actorExited(this, reason);
  }

  // ---- links and monitors, as other actors and the runtime change them ----

  /** `from` linked to this actor (or this actor was spawned linked to it). */
  linkedFrom(from: ActorId): void {
    this.links.add(from);
  }

  unlinkedFrom(from: ActorId): void {
    this.links.delete(from);
  }

  /** `watcher` monitors this actor under `ref`. */
  watchedBy(ref: MonitorRef, watcher: ActorId): void {
    this.watchers.set(ref, watcher);
  }

  unwatched(ref: MonitorRef): void {
    this.watchers.delete(ref);
  }

  /** The DOWN of a monitor this actor holds (ignored after demonitor). */
  monitorFired(ref: MonitorRef, target: ActorId, reason: ExitReason): void {
    if (this.monitors.delete(ref)) this.deliverInfo({ type: 'DOWN', ref, id: target, reason });
  }

  /**
   * Actors for which `gone` is true died elsewhere, with the reason
   * `reasonOf` gives, and will send nothing more (a kill declared by the
   * main thread, a thread's end): their monitors on this actor are dropped,
   * this actor's monitors on them fire, its links to them carry the exit.
   */
  othersGone(gone: (id: ActorId) => boolean, reasonOf: (id: ActorId) => ExitReason): void {
    // Deleting the entry being visited is safe while iterating a Map.
    for (const [ref, watcher] of this.watchers) if (gone(watcher)) this.watchers.delete(ref);
    for (const [ref, target] of this.monitors) {
      if (target !== '' && gone(target)) {
        this.monitors.delete(ref);
        this.deliverInfo({ type: 'DOWN', ref, id: target, reason: reasonOf(target) });
      }
    }
    // An exit signal may end this actor: the first one that does makes the rest no-ops.
    for (const linked of [...this.links]) if (gone(linked)) this.exitSignal(linked, reasonOf(linked), true);
  }

  holdSpawnMonitor(ref: MonitorRef): void {
    this.monitors.set(ref, '');
  }

  spawnMonitorStarted(ref: MonitorRef, child: ActorId): void {
    if (this.monitors.get(ref) === '') this.monitors.set(ref, child);
  }

  spawnMonitorKilled(ref: MonitorRef): void {
    if (this.monitors.get(ref) !== '') return;
    this.monitors.delete(ref);
    this.deliverInfo({ type: 'DOWN', ref, id: '', reason: 'killed' });
  }

  /** Selective receive (see ActorContext.receive). */
  receive(predicate: (msg: unknown) => boolean, timeoutMs: number): Promise<unknown> {
    if (this.dead) return this.passive ? Promise.resolve(undefined) : new Promise<never>(() => {});
    const msg = this.#mailbox.take(predicate);
    if (msg !== NOT_RECEIVABLE) return Promise.resolve(msg);
    if (!(timeoutMs > 0)) return Promise.resolve(undefined);
    return this.#mailbox.wait(predicate, timeoutMs, () => this.#stillReceives());
  }

  /** A receive's timeout has passed: it resolves `undefined` unless the actor has died (or a kill for it has come). */
  #stillReceives(): boolean {
    this.host.takeKills();
    return !this.dead || this.passive;
  }

  /**
   * A predicate of a waiting receive threw on a message that came: an actor
   * crashes with the error. An inbox's predicate is main-thread code: that
   * receive fails, the inbox goes on.
   */
  #predicateThrew(error: unknown): boolean {
    if (this.passive) return false;
    this.crash(error);
    return true;
  }

  sendAfter(ms: number, tag: string): () => void {
    if (this.dead) return () => {};
    const timer: LongTimeout = new LongTimeout(() => {
      this.#timers.delete(timer);
      this.deliverInfo({ type: 'TIMEOUT', tag });
    }, ms);
    this.#timers.add(timer);
    return () => {
      timer.clear();
      this.#timers.delete(timer);
    };
  }
}

function preview(value: unknown): string {
  const info = errorInfo(value);
  const text = value instanceof Error ? `${info.name}: ${info.message}` : info.message;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
