// The public types of the actor runtime, in one place.
// Semantics are Erlang's: mailboxes, links, monitors, exit signals, kill.

import type { Remote } from 'comlink';
import type { EventEmitter } from 'eventemitter3';

export type { Remote };

/** A process identifier: unique for the life of the system, never reused. */
export type ActorId = string;

/** A serialisable error, as carried in an exit reason across threads. */
export interface ErrorInfo {
  name: string;
  message: string;
  code?: string | number;
  stack?: string;
}

/**
 * Why an actor ended.
 * - `normal`: it returned from its work; links do not propagate it.
 * - `shutdown`: asked to stop (by its supervisor, or `system.shutdown()`).
 * - `killed`: `kill()`, or its host thread was terminated.
 * - `noproc`: the actor did not exist when monitored or called.
 * - `{ error }`: a handler threw or rejected, or a message was malformed.
 * - `{ shutdown: detail }`: a shutdown with a reason attached.
 */
export type ExitReason =
  | 'normal'
  | 'shutdown'
  | 'killed'
  | 'noproc'
  | { error: ErrorInfo }
  | { shutdown: string };

/**
 * A typed, serialisable address. It can be put in messages and sent to any
 * thread. `Msg` is the union of messages the actor accepts; the phantom field
 * only carries the type.
 */
export interface ActorRef<Msg = unknown> {
  readonly id: ActorId;
  /**
   * @internal type carrier, never present at run time. A method signature,
   * so that any `ActorRef<M>` is also an `ActorRef` (method parameters are
   * bivariant) while `cast`/`call` still infer `M` from it.
   */
  readonly __msg?: { carry(msg: Msg): void };
  /** Set by `spawn(…, { monitor: true })`: the ref its `DOWN` will carry. */
  readonly monitorRef?: MonitorRef;
}

/** Delivered to `handleInfo` when a monitored actor ends (at once, with `noproc`, if it was already dead). */
export interface DownMessage {
  type: 'DOWN';
  ref: MonitorRef;
  id: ActorId;
  reason: ExitReason;
}

/** Delivered to `handleInfo` of an actor that traps exits, when a linked actor ends or `exit()` targets it. */
export interface ExitMessage {
  type: 'EXIT';
  from: ActorId;
  reason: ExitReason;
}

/** A timer set by `ctx.sendAfter` or a `receive` timeout. */
export interface TimeoutMessage {
  type: 'TIMEOUT';
  tag: string;
}

export type SystemMessage = DownMessage | ExitMessage;

export type MonitorRef = string;

export type Placement =
  /** On the shared pool of host threads (default). */
  | 'pool'
  /** On a thread of its own. */
  | 'dedicated'
  /** On the main thread (supervisors and other light coordinators). It cannot be killed by terminating a thread. */
  | 'main';

export interface SpawnOptions {
  /** Register under this name (`whereis`). Fails if the name is taken. */
  name?: string;
  /** @default 'pool' */
  placement?: Placement;
  /** Link the new actor to the spawner (`spawn_link`). */
  link?: boolean;
  /** Monitor the new actor from the spawner. */
  monitor?: boolean;
}

/** What `handleCall` returns: the reply, and optionally the new state. */
export interface CallResult<State> {
  reply: unknown;
  state?: State;
  /** End the actor after replying. */
  stop?: ExitReason;
}

/**
 * An actor's behaviour, like an OTP gen_server callback module. One actor
 * processes one message at a time; while a handler awaits, further messages
 * wait in the mailbox (in order), except for those taken by `ctx.receive`.
 */
export interface Behaviour<Msg, Args, State> {
  init(args: Args, ctx: ActorContext<Msg>): State | Promise<State>;
  /** Messages sent with `cast`. Return the new state (or nothing to keep it). */
  handleCast?(msg: Msg, state: State, ctx: ActorContext<Msg>): State | undefined | Promise<State | undefined>;
  /** Messages sent with `call`. */
  handleCall?(msg: Msg, state: State, ctx: ActorContext<Msg>): CallResult<State> | Promise<CallResult<State>>;
  /** `DOWN`, trapped `EXIT` and timer messages. */
  handleInfo?(
    msg: SystemMessage | TimeoutMessage,
    state: State,
    ctx: ActorContext<Msg>,
  ): State | undefined | Promise<State | undefined>;
  /** Called on a trappable exit (not on `kill`). */
  terminate?(reason: ExitReason, state: State, ctx: ActorContext<Msg>): void | Promise<void>;
  /**
   * Checks an incoming message's shape; a message that fails ends the actor
   * with `{ error: { name: 'MalformedMessage', code: 'malformed_message', … } }`.
   */
  isMessage?(msg: unknown): msg is Msg;
}

/**
 * What `defineActor(import.meta.url, behaviour)` returns. The module's
 * default export must be this value: host threads import the module by URL
 * to run the actor.
 */
export interface ActorDefinition<Msg, Args> {
  readonly module: string;
  readonly behaviour: Behaviour<Msg, Args, unknown>;
  /** The export of `module` that holds this definition. @default 'default' */
  readonly exportName?: string;
  /** @internal type carrier; a method signature, so any definition is also an `ActorDefinition<unknown, unknown>` */
  readonly __args?: { carry(args: Args): void };
}

/** Everything an actor can do; also what the main thread's `ActorSystem` offers. */
export interface ActorOperations {
  spawn<M, A>(definition: ActorDefinition<M, A>, args: A, options?: SpawnOptions): Promise<ActorRef<M>>;
  cast<M>(to: ActorRef<M> | string, msg: M): void;
  /**
   * Rejects with `ActorError` code `timeout`, `noproc`, `killed`, or `exit` (carrying the callee's reason).
   * `timeoutMs` defaults to 5000 (OTP's gen_server:call); `Infinity` waits forever.
   */
  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R>;
  /** Sends an exit signal (`exit(Pid, Reason)`); `'kill'` is the same as `kill()`. */
  exit(target: ActorRef | ActorId, reason: ExitReason | 'kill'): void;
  /** Abrupt and untrappable; reason `killed`. */
  kill(target: ActorRef | ActorId | string): void;
  whereis(name: string): ActorId | undefined;
}

export interface ActorContext<Msg> extends ActorOperations {
  readonly self: ActorRef<Msg>;
  readonly name: string | undefined;
  link(target: ActorRef | ActorId): void;
  unlink(target: ActorRef | ActorId): void;
  monitor(target: ActorRef | ActorId): MonitorRef;
  demonitor(ref: MonitorRef): void;
  trapExit(on: boolean): void;
  register(name: string): void;
  /**
   * Selective receive: the oldest queued message (cast payload or system
   * message) that matches, leaving the others in order; `undefined` on
   * timeout.
   */
  receive<T>(predicate: (msg: Msg | SystemMessage) => msg is T & (Msg | SystemMessage), timeoutMs: number): Promise<T | undefined>;
  receive(predicate: (msg: Msg | SystemMessage) => boolean, timeoutMs: number): Promise<Msg | SystemMessage | undefined>;
  /** Delivers `{ type: 'TIMEOUT', tag }` to `handleInfo` after `ms`. Returns a cancel function. */
  sendAfter(ms: number, tag: string): () => void;
  /** Ends this actor after the current handler with `reason`. */
  stop(reason?: ExitReason): void;
  /**
   * The system's core object (`createActorSystem({ core })` or
   * `system.setCore`), reached through a comlink bridge: each method call is
   * one whole call on the main thread, and a returned promise (a watch)
   * resolves in this actor's thread. The bridge follows `setCore`; while no
   * core is set a call waits for one up to `coreWaitMs`, then rejects with
   * `ActorError` code `no_core`.
   */
  core<T>(): Remote<T>;
}

/** Options of `createActorSystem`. */
export interface ActorSystemOptions {
  /**
   * Host threads in the shared pool.
   * @default os.availableParallelism()
   */
  threads?: number;
  /**
   * An object living on the main thread that every actor reaches with
   * `ctx.core()` (e.g. a `Jobs` instance). It can be set or replaced later
   * with `system.setCore`.
   */
  core?: object;
  /**
   * How long a bridge call (`ctx.core()`) made while no core is set waits
   * for `setCore` before it rejects with `ActorError` code `no_core`.
   * @default 5000
   */
  coreWaitMs?: number;
  /**
   * How long a killed actor may stay inside one synchronous handler (or
   * `init`, or `terminate`) while its host thread makes no progress at all,
   * before the thread is deemed stuck in a loop there and terminated (its
   * co-hosted actors die `killed`, a replacement thread starts). A busy host
   * thread is never terminated for a kill: it takes the kill between two
   * handlers. The default leaves room for a handler that is slowed down by
   * a loaded machine (GC, CPU starvation).
   * @default 1000
   */
  killTimeoutMs?: number;
  /**
   * How long a host thread with a kill to confirm may make no progress at all
   * (start no handler, take no message) while stuck somewhere else than in
   * the killed actor's handler (another actor's handler, a timer callback, a
   * loop after an `await`) before it is terminated like a stuck one.
   * @default 10000
   */
  stuckThreadTimeoutMs?: number;
  /**
   * How long `shutdown()` waits for actors' `terminate` before it terminates
   * the threads anyway.
   * @default 5000
   */
  shutdownTimeoutMs?: number;
}

/** Where an actor runs: `0` is the main thread, other numbers are host threads (never reused). */
export type ThreadId = number;

/** The events of `system.events` (eventemitter3). */
export interface ActorSystemEvents {
  spawned: (event: { id: ActorId; name: string | undefined; placement: Placement; thread: ThreadId }) => void;
  exited: (event: { id: ActorId; name: string | undefined; reason: ExitReason; thread: ThreadId }) => void;
  thread_replaced: (event: { thread: ThreadId; replacement: ThreadId; killed: ActorId[] }) => void;
}

/** Options of `system.inbox`. */
export interface InboxOptions {
  /** Register the inbox under this name (`whereis`), like an actor. Fails with `name_taken` if a live actor holds it. */
  name?: string;
}

/**
 * A mailbox for main-thread code (`system.inbox()`): a process of its own,
 * with an id in the system's directory, that other actors can cast to,
 * monitor and link to, and that main-thread code reads with selective
 * `receive` or `for await`. It traps exits: a linked actor's end arrives as
 * an `EXIT` message rather than closing it. It answers no calls (a call to
 * it waits for its timeout, or fails with the close reason, as a call to an
 * Erlang process that never replies).
 *
 * @example
 * const inbox = system.inbox<Progress>({ name: 'progress' });
 * inbox.monitor(worker);
 * for await (const msg of inbox) {
 *   if ('type' in msg && msg.type === 'DOWN') break;
 *   console.log(msg);
 * }
 * inbox.close();
 */
export interface Inbox<Msg = unknown> extends AsyncIterable<Msg | SystemMessage> {
  readonly ref: ActorRef<Msg>;
  readonly name: string | undefined;
  /** Closed by `close`, a kill, or the system's shutdown. */
  readonly closed: boolean;
  /**
   * Selective receive: the oldest queued message (cast payload, `DOWN` or
   * `EXIT`) that matches `predicate` (default: any), leaving the others in
   * order. Resolves `undefined` after `timeoutMs` (default: no limit) or when
   * the inbox closes. A predicate that throws rejects this receive.
   */
  receive<T extends Msg | SystemMessage>(predicate: (msg: Msg | SystemMessage) => msg is T, timeoutMs?: number): Promise<T | undefined>;
  receive(predicate?: (msg: Msg | SystemMessage) => boolean, timeoutMs?: number): Promise<Msg | SystemMessage | undefined>;
  /** Monitors an actor (by ref, id or name); its `DOWN` arrives in this inbox (at once with `noproc` if it is not alive). */
  monitor(target: ActorRef | ActorId | string): MonitorRef;
  /** Ends a monitor; `flush` also drops its `DOWN` if it has already arrived. */
  demonitor(ref: MonitorRef, options?: { flush?: boolean }): void;
  /**
   * Ends the inbox with `reason` (default `normal`): its monitors get `DOWN`,
   * linked actors an exit signal, pending receives resolve `undefined`,
   * iterators end, queued messages are dropped, and later messages to it are
   * dropped as for any dead actor. Idempotent.
   */
  close(reason?: ExitReason): void;
  /** Every incoming message in order, until the inbox closes. Ending a loop early leaves the inbox open. */
  [Symbol.asyncIterator](): AsyncIterator<Msg | SystemMessage>;
}

/** The main thread's handle on the runtime (`createActorSystem`). */
export interface ActorSystem extends ActorOperations {
  /**
   * The system's own id (`<0.0>`): the sender of what the main thread does
   * outside any actor (`system.exit`, `system.call`, `system.cast`), so the
   * `from` of the EXIT such an exit signal becomes in a trapping actor, and
   * the parent of what is started from the system (e.g. a supervisor).
   */
  readonly id: ActorId;
  /** Resolves with the reason when the actor ends; `noproc` at once if it is not alive. */
  monitor(target: ActorRef | ActorId | string): Promise<ExitReason>;
  readonly events: EventEmitter<ActorSystemEvents>;
  /** The host threads alive now (pool and dedicated), for introspection. */
  threads(): ThreadId[];
  /** The thread an actor lives on, or undefined if it is not alive. */
  threadOf(target: ActorRef | ActorId | string): ThreadId | undefined;
  /** A mailbox for main-thread code: a process id other actors can send to (see `Inbox`). */
  inbox<Msg = unknown>(options?: InboxOptions): Inbox<Msg>;
  /**
   * Sets or replaces the object `ctx.core()` reaches in every thread; calls
   * already running keep running on the old one. `undefined` leaves the
   * system without a core: bridge calls wait for the next `setCore`, up to
   * `coreWaitMs`, then reject with `ActorError` code `no_core`.
   */
  setCore(core: object | undefined): void;
  /** Stops every actor with `shutdown`, terminates every thread; idempotent. */
  shutdown(): Promise<void>;
}
