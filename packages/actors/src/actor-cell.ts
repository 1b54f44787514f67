// One live actor: its mailbox, its links and monitors, and the loop that hands
// one message at a time to its behaviour. Every failure ends this cell only.

import type { CellHost, HostedCell } from './cell-host.js';
import { ActorError, MalformedMessageError } from './errors.js';
import { type Envelope, envelope, Kind } from './envelope.js';
import { crashReason, errorInfo, isExitReason } from './exit-reason.js';
import { PROGRESS, RUNNING } from './host-status.js';
import { LongTimeout } from './max-timer.js';
import type {
  ActorContext,
  ActorDefinition,
  ActorId,
  ActorRef,
  Behaviour,
  CallResult,
  ExitReason,
  MonitorRef,
  Remote,
  SpawnOptions,
  SystemMessage,
  TimeoutMessage,
} from './interfaces.js';

/** Mailbox entries that are not from another actor: DOWN, trapped EXIT, TIMEOUT. */
export const INFO = 0;

type AnyBehaviour = Behaviour<unknown, unknown, unknown>;

interface Receiver {
  predicate: (msg: unknown) => boolean;
  resolve: (msg: unknown) => void;
  reject: (error: unknown) => void;
  timer: LongTimeout | undefined;
}

/** The behaviour of a passive cell (an inbox): nothing runs, `receive` takes the mail. */
const NO_BEHAVIOUR: AnyBehaviour = { init: () => undefined };

/** Messages an actor handles in one turn of its thread's ready loop. */
const STEP_MESSAGES = 64;
/** Mailboxes compact their consumed head once it is this long and more than half the array. */
const COMPACT_AT = 1024;

export class ActorCell implements HostedCell {
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
  /** Monitors this actor holds: ref -> target ('' while the spawn that creates the target is under way). */
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

  #mailbox: Envelope[] = [];
  #head = 0;
  #current: Envelope | undefined;
  #receivers: Receiver[] = [];
  #timers = new Set<LongTimeout>();
  #stopReason: ExitReason | undefined;
  /** Inside step(): it reschedules at the end, settle need not. */
  #stepping = false;
  #dying = false;
  #initialized = false;
  #onStarted: ((id: ActorId, failure?: ExitReason) => void) | undefined;
  // Bound once per actor so that an async handler costs no closure per message.
  // An async handler resumes outside the ready loop: a kill that came meanwhile is taken first,
  // so that a killed actor sends no reply and starts nothing more (see ActorHost.takeKills).
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
    return this.#head < this.#mailbox.length;
  }

  /** Runs init; `onStarted` hears the outcome before any other message is handled. */
  start(args: unknown, onStarted: (id: ActorId, failure?: ExitReason) => void): void {
    this.#onStarted = onStarted;
    let result: unknown;
    const outer = this.#enter();
    try {
      result = this.behaviour.init(args, this.ctx);
    } catch (error) {
      this.#leave(outer);
      this.#initFailed(error);
      return;
    }
    this.#leave(outer);
    if (isThenable(result)) result.then((state) => this.#initDone(state), (error) => this.#initFailed(error));
    else this.#initDone(result);
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
  deliver(env: Envelope): void {
    if (this.dead) return;
    if (this.#receivers.length > 0 && env.kind !== Kind.call) {
      // A receive that takes it resumes this actor's code: not once a kill for it has come.
      this.host.takeKills();
      if (this.dead) return;
      if (this.#offer(env)) return;
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
    if (this.#receivers.length === 0 && !this.busy && !this.queued && !this.hasMail) {
      // One envelope serves the whole run: it is never queued, only seen as #current.
      const env = envelope(Kind.cast, this.id, from, 0, undefined);
      this.#stepping = true;
      const host = this.host;
      for (; i < end; i++) {
        // A kill from the main thread is taken between two handlers, however long the run (see ActorHost.takeKills).
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
    this.deliver(envelope(INFO, this.id, this.id, 0, msg));
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
    const env = this.#mailbox[this.#head];
    if (env === undefined) return;
    this.#takeHead();
    this.#handle(env);
  }

  /** Drops the oldest mailbox entry (already read by the caller). */
  #takeHead(): void {
    this.#mailbox[this.#head++] = undefined as unknown as Envelope;
    if (this.#head === this.#mailbox.length) {
      this.#mailbox.length = 0;
      this.#head = 0;
    } else if (this.#head >= COMPACT_AT && this.#head * 2 > this.#mailbox.length) {
      this.#mailbox = this.#mailbox.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Drops a `DOWN` with this monitor ref from the mailbox, if it has arrived (demonitor with flush). */
  flushDown(ref: MonitorRef): void {
    const mailbox = this.#mailbox;
    for (let i = this.#head; i < mailbox.length; i++) {
      const env = mailbox[i] as Envelope;
      if (env.kind === INFO && (env.body as SystemMessage).type === 'DOWN' && (env.body as { ref: MonitorRef }).ref === ref) {
        if (i === this.#head) this.#takeHead();
        else mailbox.splice(i, 1);
        return;
      }
    }
  }

  #handle(env: Envelope): void {
    this.#current = env;
    this.busy = true;
    let result: unknown;
    const outer = this.#enter();
    try {
      result = this.#dispatch(env);
    } catch (error) {
      this.#leave(outer);
      this.crash(error);
      return;
    }
    this.#leave(outer);
    if (isThenable(result)) result.then(this.#onSettled, this.#onRejected);
    else this.#settle(result);
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

  #dispatch(env: Envelope): unknown {
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
        return behaviour.handleInfo(env.body as SystemMessage | TimeoutMessage, this.state, this.ctx);
      default:
        throw new MalformedMessageError(`${this.id} got a message of unknown kind ${String(env.kind)}`);
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
      this.#cancelReceivers();
      let result: unknown;
      const outer = this.#enter();
      try {
        result = terminate(reason, this.state, this.ctx);
      } catch {
        result = undefined;
      }
      this.#leave(outer);
      if (isThenable(result)) {
        const finish = (): void => this.#finalize(reason);
        result.then(finish, finish);
        return;
      }
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
    this.#cancelReceivers();
    for (const timer of this.#timers) timer.clear();
    this.#timers.clear();
    const host = this.host;
    host.forget(this);
    // Callers waiting on this actor hear its reason, like gen_server:call's monitor.
    const current = this.#current;
    if (current !== undefined && current.kind === Kind.call) host.send(Kind.callFailed, current.from, this.id, current.ref, reason);
    for (let i = this.#head; i < this.#mailbox.length; i++) {
      const env = this.#mailbox[i] as Envelope;
      if (env.kind === Kind.call) host.send(Kind.callFailed, env.from, this.id, env.ref, reason);
    }
    this.#mailbox = [];
    this.#head = 0;
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
    const mailbox = this.#mailbox;
    for (let i = this.#head; i < mailbox.length; i++) {
      const env = mailbox[i] as Envelope;
      const msg = receivable(env);
      if (msg !== NOT_RECEIVABLE && predicate(msg)) {
        // The oldest message is the common case (an inbox read in order): no splice.
        if (i === this.#head) this.#takeHead();
        else mailbox.splice(i, 1);
        return Promise.resolve(msg);
      }
    }
    if (!(timeoutMs > 0)) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const receiver: Receiver = { predicate, resolve, reject, timer: undefined };
      if (Number.isFinite(timeoutMs)) {
        receiver.timer = new LongTimeout(() => {
          this.host.takeKills();
          if (this.dead && !this.passive) return;
          const at = this.#receivers.indexOf(receiver);
          if (at >= 0) this.#receivers.splice(at, 1);
          resolve(undefined);
        }, timeoutMs);
      }
      this.#receivers.push(receiver);
    });
  }

  #offer(env: Envelope): boolean {
    const msg = receivable(env);
    if (msg === NOT_RECEIVABLE) return false;
    const receivers = this.#receivers;
    for (let i = 0; i < receivers.length; i++) {
      const receiver = receivers[i] as Receiver;
      let matched: boolean;
      try {
        matched = receiver.predicate(msg);
      } catch (error) {
        if (!this.passive) {
          this.crash(error);
          return true;
        }
        // Main-thread code passed that predicate: its receive fails, the inbox goes on.
        receivers.splice(i--, 1);
        receiver.timer?.clear();
        receiver.reject(error);
        continue;
      }
      if (matched) {
        receivers.splice(i, 1);
        receiver.timer?.clear();
        receiver.resolve(msg);
        return true;
      }
    }
    return false;
  }

  #cancelReceivers(): void {
    // A dead actor's pending receives never settle: its async work is abandoned. An inbox's
    // belong to main-thread code, which goes on: they resolve undefined.
    const receivers = this.#receivers;
    this.#receivers = [];
    for (const receiver of receivers) {
      receiver.timer?.clear();
      if (this.passive) receiver.resolve(undefined);
    }
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

const NOT_RECEIVABLE = Symbol('not receivable');

/** What `receive` may see of a mailbox entry: cast messages, DOWN and EXIT; never calls or timers. */
function receivable(env: Envelope): unknown {
  if (env.kind === Kind.cast) return env.body;
  if (env.kind === INFO && (env.body as { type: string }).type !== 'TIMEOUT') return env.body;
  return NOT_RECEIVABLE;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}


function preview(value: unknown): string {
  const info = errorInfo(value);
  const text = value instanceof Error ? `${info.name}: ${info.message}` : info.message;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** What an actor's handlers see as `ctx`; every operation acts as this actor. */
class CellContext implements ActorContext<unknown> {
  readonly #cell: ActorCell;
  readonly self: ActorRef<unknown>;

  constructor(cell: ActorCell) {
    this.#cell = cell;
    this.self = Object.freeze({ id: cell.id });
  }

  get name(): string | undefined {
    return this.#cell.name;
  }

  spawn<M, A>(definition: ActorDefinition<M, A>, args: A, options?: SpawnOptions): Promise<ActorRef<M>> {
    return this.#cell.host.spawn(this.#cell, definition as ActorDefinition<unknown, unknown>, args, options) as Promise<ActorRef<M>>;
  }

  cast<M>(to: ActorRef<M> | string, msg: M): void {
    if (!this.#cell.dead) this.#cell.host.cast(this.#cell.id, to, msg);
  }

  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R> {
    if (this.#cell.dead) return new Promise<never>(() => {});
    return this.#cell.host.call(this.#cell, this.#cell.id, to, msg, timeoutMs) as Promise<R>;
  }

  exit(target: ActorRef | ActorId, reason: ExitReason | 'kill'): void {
    if (!this.#cell.dead) this.#cell.host.exit(this.#cell.id, target, reason);
  }

  kill(target: ActorRef | ActorId | string): void {
    if (!this.#cell.dead) this.#cell.host.kill(target);
  }

  whereis(name: string): ActorId | undefined {
    return this.#cell.host.whereis(name);
  }

  link(target: ActorRef | ActorId): void {
    const cell = this.#cell;
    const id = cell.host.resolve(target);
    if (cell.dead || id === undefined || id === cell.id) return;
    cell.links.add(id);
    cell.host.send(Kind.link, id, cell.id, 0, null);
  }

  unlink(target: ActorRef | ActorId): void {
    const cell = this.#cell;
    const id = cell.host.resolve(target);
    if (cell.dead || id === undefined || !cell.links.delete(id)) return;
    cell.host.send(Kind.unlink, id, cell.id, 0, null);
  }

  monitor(target: ActorRef | ActorId): MonitorRef {
    const cell = this.#cell;
    const ref = cell.host.newMonitorRef();
    if (cell.dead) return ref;
    const id = cell.host.resolve(target);
    if (id === undefined) {
      cell.monitors.set(ref, '');
      cell.host.send(Kind.down, cell.id, typeof target === 'string' ? target : target.id, ref, 'noproc');
      return ref;
    }
    cell.monitors.set(ref, id);
    cell.host.send(Kind.monitor, id, cell.id, ref, null);
    return ref;
  }

  demonitor(ref: MonitorRef): void {
    const cell = this.#cell;
    const target = cell.monitors.get(ref);
    if (target === undefined) return;
    cell.monitors.delete(ref);
    if (target !== '' && !cell.dead) cell.host.send(Kind.demonitor, target, cell.id, ref, null);
  }

  trapExit(on: boolean): void {
    this.#cell.trapping = on;
  }

  register(name: string): void {
    if (!this.#cell.dead) this.#cell.host.register(this.#cell, name);
  }

  receive<T>(predicate: (msg: unknown) => boolean, timeoutMs: number): Promise<T | undefined> {
    if (typeof predicate !== 'function') throw new ActorError('bad_argument', 'receive needs a predicate function');
    return this.#cell.receive(predicate, timeoutMs) as Promise<T | undefined>;
  }

  sendAfter(ms: number, tag: string): () => void {
    return this.#cell.sendAfter(ms, tag);
  }

  stop(reason: ExitReason = 'normal'): void {
    this.#cell.stop(reason);
  }

  core<T>(): Remote<T> {
    return this.#cell.host.core<T>();
  }
}
