// The main thread's side of the runtime: it hosts `placement: 'main'` actors
// (thread 0), owns the pool of host threads, the system-wide directory of
// actors, places spawns, declares killed actors dead, replaces a thread that
// ended, and shuts down. Its parts: the name directory (name-directory.ts),
// the spawns ordered from host threads (spawn-orders.ts), and the kill
// watchdog that terminates a host stuck in a synchronous loop
// (kill-watchdog.ts).

import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { EventEmitter } from 'eventemitter3';
import { ActorHost } from './actor-host.js';
import { MAIN_THREAD, SYSTEM_ID, threadOfId } from './actor-id.js';
import { exposeCore } from './core-bridge.js';
import { CoreSlot } from './core-slot.js';
import { loadDefinition } from './define-actor.js';
import { ActorError } from './errors.js';
import { type BodyOf, type ControlEnvelope, type ControlKind, type EnvelopeOf, Kind, type RefOf } from './envelope.js';
import type { Coordinator, SpawnOutcome, SpawnRequest } from './host-protocol.js';
import { MainInbox } from './inbox.js';
import { postKills } from './kill-port.js';
import { KillWatchdog } from './kill-watchdog.js';
import { MAX_TIMER_MS } from './max-timer.js';
import { NameDirectory } from './name-directory.js';
import { OptionNames } from './option-names.js';
import { initFailed, orderOf, SpawnOrders } from './spawn-orders.js';
import { checkName } from './spawn-request.js';
import type {
  ActorDefinition,
  ActorId,
  ActorRef,
  ActorSystem,
  ActorSystemEvents,
  ActorSystemOptions,
  ExitReason,
  Inbox,
  InboxOptions,
  Placement,
  SpawnOptions,
  ThreadId,
} from './interfaces.js';
import { drain, type HostThread, ThreadPool } from './thread-pool.js';

interface DirectoryEntry {
  thread: ThreadId;
  name: string | undefined;
  placement: Placement;
}

/** @see ActorSystemOptions.killTimeoutMs */
const DEFAULT_KILL_TIMEOUT_MS = 1000;
/** @see ActorSystemOptions.stuckThreadTimeoutMs */
const DEFAULT_STUCK_THREAD_TIMEOUT_MS = 10_000;
/** @see ActorSystemOptions.coreWaitMs */
const DEFAULT_CORE_WAIT_MS = 5000;

const SYSTEM_OPTIONS = new OptionNames(
  'createActorSystem',
  ['threads', 'core', 'coreWaitMs', 'killTimeoutMs', 'stuckThreadTimeoutMs', 'shutdownTimeoutMs'],
  { workers: 'threads', poolSize: 'threads' },
);
const INBOX_OPTIONS = new OptionNames('inbox', ['name']);

/**
 * Starts an actor system: the pool of host threads starts now; actors are
 * spawned with `system.spawn`.
 *
 * @example
 * const system = createActorSystem({ threads: 2 });
 * const counter = await system.spawn(counterActor, 0);
 * system.cast(counter, { add: 1 });
 * await system.shutdown();
 */
export function createActorSystem(options: ActorSystemOptions = {}): ActorSystem {
  if (typeof options !== 'object' || options === null) {
    throw new ActorError('bad_argument', `the options of createActorSystem are an object, got ${String(options)}`);
  }
  SYSTEM_OPTIONS.check(options);
  return new ThreadedActorSystem(options);
}

class ThreadedActorSystem implements ActorSystem, Coordinator {
  readonly id: ActorId = SYSTEM_ID;
  readonly events = new EventEmitter<ActorSystemEvents>();
  readonly #host = new ActorHost(MAIN_THREAD, 0);
  readonly #pool: ThreadPool;
  readonly #shutdownTimeoutMs: number;
  readonly #directory = new Map<ActorId, DirectoryEntry>();
  readonly #names = new NameDirectory(this.#host.names, (kind, id, name) => this.#broadcast(kind, id, 0, name));
  readonly #watchdog: KillWatchdog;
  readonly #orders = new SpawnOrders((thread, ref, order) => this.#host.sendControl(thread, Kind.spawn, '', ref, order));
  readonly #stopAcks = new Map<ThreadId, () => void>();
  #closing = false;
  #shutdown: Promise<void> | undefined;
  #corePorts: MessagePort[] = [];
  readonly #core: CoreSlot;

  constructor(options: ActorSystemOptions) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1) throw new ActorError('bad_argument', `threads must be a positive integer, got ${threads}`);
    this.#watchdog = new KillWatchdog(
      positiveMs('killTimeoutMs', options.killTimeoutMs ?? DEFAULT_KILL_TIMEOUT_MS),
      positiveMs('stuckThreadTimeoutMs', options.stuckThreadTimeoutMs ?? DEFAULT_STUCK_THREAD_TIMEOUT_MS),
      (thread) => void this.#pool.terminate(thread),
    );
    this.#shutdownTimeoutMs = options.shutdownTimeoutMs ?? 5000;
    checkCore(options.core);
    this.#core = new CoreSlot(options.core, positiveMs('coreWaitMs', options.coreWaitMs ?? DEFAULT_CORE_WAIT_MS));
    // Every thread's bridge exposes the slot's forwarder, so that it follows setCore. Main-thread
    // actors reach it through the same bridge, so that `ctx.core()` means the same everywhere.
    const forwarder = this.#core.forwarder();
    const channel = new MessageChannel();
    exposeCore(forwarder, channel.port1);
    channel.port1.unref();
    channel.port2.unref();
    this.#corePorts.push(channel.port1, channel.port2);
    this.#host.setCorePort(channel.port2);
    this.#host.coordinator = this;
    this.#host.onControl = (env) => this.#control(env);
    this.#pool = new ThreadPool({
      host: this.#host,
      core: forwarder,
      shutdownTimeoutMs: this.#shutdownTimeoutMs,
      onExit: (thread) => this.#threadExited(thread),
    });
    for (let i = 0; i < threads; i++) this.#pool.start(false);
  }

  // ---- ActorOperations ----------------------------------------------------

  spawn<M, A>(definition: ActorDefinition<M, A>, args: A, options?: SpawnOptions): Promise<ActorRef<M>> {
    return this.#host.spawn(undefined, definition as ActorDefinition<unknown, unknown>, args, options) as Promise<ActorRef<M>>;
  }

  cast<M>(to: ActorRef<M> | string, msg: M): void {
    this.#host.cast(SYSTEM_ID, to, msg);
  }

  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R> {
    return this.#host.call(undefined, SYSTEM_ID, to, msg, timeoutMs) as Promise<R>;
  }

  exit(target: ActorRef | ActorId, reason: ExitReason | 'kill'): void {
    this.#host.exit(SYSTEM_ID, target, reason);
  }

  kill(target: ActorRef | ActorId | string): void {
    this.#host.kill(target);
  }

  whereis(name: string): ActorId | undefined {
    return this.#host.whereis(name);
  }

  monitor(target: ActorRef | ActorId | string): Promise<ExitReason> {
    return this.#host.monitorFromSystem(target);
  }

  inbox<Msg = unknown>(options: InboxOptions = {}): Inbox<Msg> {
    if (this.#closing) throw new ActorError('shutting_down', 'the actor system is shutting down');
    if (typeof options !== 'object' || options === null) throw new ActorError('bad_argument', `the options of inbox are an object, got ${String(options)}`);
    INBOX_OPTIONS.check(options);
    const name = options.name;
    if (name !== undefined) {
      checkName(name);
      this.#names.checkFree(name);
    }
    const cell = this.#host.startInbox();
    this.#started(cell.id, MAIN_THREAD, undefined, 'main');
    if (name !== undefined) {
      // Through registerName: a name a killed actor held until its thread confirms is taken after that.
      cell.name = name;
      this.registerName(cell.id, name);
    }
    return new MainInbox<Msg>(cell);
  }

  setCore(core: object | undefined): void {
    checkCore(core);
    if (this.#closing) return;
    this.#core.set(core);
  }

  threads(): ThreadId[] {
    return this.#pool
      .all()
      .filter((thread) => !thread.terminating)
      .map((thread) => thread.id);
  }

  threadOf(target: ActorRef | ActorId | string): ThreadId | undefined {
    const id = this.#host.resolve(target);
    return id === undefined ? undefined : this.#directory.get(id)?.thread;
  }

  // ---- Coordinator (for actors on every thread) ---------------------------

  async requestSpawn(request: SpawnRequest): Promise<ActorId> {
    if (this.#closing) throw new ActorError('shutting_down', 'the actor system is shutting down');
    const name = request.name;
    if (name !== undefined) {
      await this.#names.released(name);
      if (this.#closing) throw new ActorError('shutting_down', 'the actor system is shutting down');
      this.#names.reserve(name);
    }
    try {
      if (request.placement === 'main') return await this.#spawnHere(request);
      if (request.placement === 'dedicated') {
        try {
          return await this.#orders.place(this.#pool.startDedicated(), request);
        } finally {
          if (!this.#closing) this.#pool.keepSpare();
        }
      }
      return await this.#orders.place(this.#pool.pick() ?? this.#pool.start(false), request);
    } finally {
      if (name !== undefined) this.#names.unreserve(name);
    }
  }

  async #spawnHere(request: SpawnRequest): Promise<ActorId> {
    const definition = request.definition ?? (await loadDefinition(request.module, request.exportName));
    return new Promise<ActorId>((resolve, reject) => {
      this.#host.startActor(orderOf(request), definition.behaviour, (id, failure) => {
        if (failure !== undefined) reject(initFailed(request, failure));
        else {
          this.#started(id, MAIN_THREAD, request.name, request.placement);
          resolve(id);
        }
      });
    });
  }

  /** Bookkeeping of a started actor, done before any message of it is handled here. */
  #started(id: ActorId, thread: ThreadId, name: string | undefined, placement: Placement): void {
    this.#directory.set(id, { thread, name, placement });
    this.#pool.get(thread)?.actors.add(id);
    if (name !== undefined) this.#names.set(name, id);
    this.events.emit('spawned', { id, name, placement, thread });
  }

  /**
   * A kill of an actor on a host thread. The main thread owns routing and
   * names, so it declares the actor dead at once rather than after a round
   * trip to its thread: what that thread already sent is taken first (so the
   * actor's earlier messages still come before its DOWN, per pair of
   * actors); then calls, monitors and links held on the main thread see
   * `killed`, its id bounces here and its name is free. The thread is told
   * first, on its kill port and by its KILLS_WAITING flag, before anything
   * the main thread sends after this: it takes the kill before it starts
   * any other handler, so nothing that follows the declared death (a call
   * from a co-hosted actor told of it, say) finds the actor alive there.
   * Links and monitors on other threads hear `killed` from that thread. Until it
   * confirms, anything it sends from the actor is dropped (sent after the
   * death), and a spawn that takes the actor's name waits, so the old holder
   * runs no handler once its successor has started. If it does not confirm,
   * the watchdog decides whether it is stuck (see kill-watchdog.ts).
   */
  requestKill(id: ActorId): void {
    const thread = this.#pool.get(threadOfId(id));
    if (thread === undefined || thread.terminating) return;
    const ref = this.#watchdog.watch(thread, id);
    // An actor still in init is not declared: its spawn hears the kill from its thread. Nor is one
    // killed by code run while a batch is being delivered here (a cast handler, a terminate): taking
    // later batches then would deliver them before the rest of the current one.
    if (!this.#directory.has(id) || this.#host.receiving) {
      postKills(thread, [id, ref]);
      return;
    }
    drain(thread.mainPort, this.#host);
    // After the drain (what the thread sends once it has the kill is not taken here out of turn, or
    // the declaration below would be skipped), before the declaration and all that follows it.
    postKills(thread, [id, ref]);
    const entry = this.#directory.get(id);
    if (entry === undefined) return; // it ended on its own, in what was just taken
    thread.dying.add(id);
    if (entry.name !== undefined) this.#names.heldByKilled(entry.name, id);
    this.#host.declareDead(id, 'killed');
    this.#exited(id, 'killed');
  }

  /** The thread confirmed the death of an actor the main thread declared dead (or is gone). */
  #confirmDead(thread: HostThread, id: ActorId): void {
    if (!thread.dying.delete(id)) return;
    this.#host.confirmDead(id);
    this.#names.confirmDead(id);
  }

  registerName(id: ActorId, name: string): void {
    if (this.#names.awaitsConfirmation(name)) {
      // Taken by a killed actor whose thread has not confirmed yet: the new holder gets it after.
      void this.#names.released(name).then(() => {
        if (!this.#closing && this.#mayStillRun(id)) this.registerName(id, name);
      });
      return;
    }
    const entry = this.#directory.get(id);
    if (this.#names.takenFor(name, id)) {
      // Two threads took the same name at once: the later one loses, as a crash.
      const message = `the name ${name} belongs to ${this.#names.whereis(name)}`;
      this.#host.exit(SYSTEM_ID, id, { error: { name: 'ActorError', code: 'name_taken', message } });
      return;
    }
    if (entry !== undefined) entry.name = name;
    this.#names.set(name, id);
  }

  /** Alive, or possibly still in init (its spawn unanswered). */
  #mayStillRun(id: ActorId): boolean {
    return this.#directory.has(id) || this.#orders.pendingOn(threadOfId(id));
  }

  actorExited(id: ActorId, _name: string | undefined, reason: ExitReason): void {
    this.#exited(id, reason);
  }

  // ---- thread-level messages from host threads ----------------------------

  #control(env: ControlEnvelope): void {
    switch (env.kind) {
      case Kind.ready:
        this.#pool.get(env.ref)?.markReady();
        break;
      case Kind.spawned:
      case Kind.spawnFailed:
        this.#orderAnswered(env);
        break;
      case Kind.spawnRequest: {
        const { request, thread } = env.body;
        this.requestSpawn(request).then(
          (id) => this.#answerSpawn(thread, env.ref, { id }),
          (error: unknown) => {
            const failure = error instanceof ActorError ? error : new ActorError('bad_argument', String(error));
            this.#answerSpawn(thread, env.ref, { code: failure.code, message: failure.message, reason: failure.reason });
          },
        );
        break;
      }
      case Kind.exited:
        this.#exited(env.to, env.body);
        break;
      case Kind.register: {
        this.registerName(env.body.id, env.body.name);
        break;
      }
      case Kind.killRequest:
        this.#host.kill(env.to);
        break;
      case Kind.killAck: {
        const kill = this.#watchdog.acknowledged(env.ref);
        if (kill !== undefined) this.#confirmDead(kill.thread, kill.id);
        break;
      }
      case Kind.stopped:
        this.#stopAcks.get(env.ref)?.();
        break;
      default:
    }
  }

  #orderAnswered(env: EnvelopeOf<typeof Kind.spawned | typeof Kind.spawnFailed>): void {
    const order = this.#orders.answered(env.ref);
    if (order === undefined) return;
    if (env.kind === Kind.spawned) {
      this.#started(env.body, order.thread.id, order.request.name, order.request.placement);
      order.resolve(env.body);
    } else {
      order.reject(initFailed(order.request, env.body));
      if (order.thread.dedicated) void this.#pool.terminate(order.thread);
    }
  }

  #answerSpawn(thread: ThreadId, ref: number, outcome: SpawnOutcome): void {
    this.#host.sendControl(thread, Kind.spawnOutcome, '', ref, outcome);
  }

  // ---- bookkeeping ----------------------------------------------------------

  #exited(id: ActorId, reason: ExitReason): void {
    const entry = this.#directory.get(id);
    if (entry === undefined) return; // its spawn failed: the spawner was told instead
    this.#directory.delete(id);
    const thread = this.#pool.get(entry.thread);
    thread?.actors.delete(id);
    if (entry.name !== undefined) this.#names.cleared(entry.name, id);
    this.events.emit('exited', { id, name: entry.name, reason, thread: entry.thread });
    if (thread?.dedicated && thread.actors.size === 0 && thread.pendingSpawns === 0) void this.#pool.terminate(thread);
  }

  /** A thread-level message to every host thread. */
  #broadcast<K extends ControlKind>(kind: K, from: ActorId, ref: RefOf<K>, body: BodyOf<K>): void {
    for (const thread of this.#pool.all()) {
      if (!thread.terminating) this.#host.sendControl(thread.id, kind, '', ref, body, from);
    }
  }

  /** A host thread ended: terminated (stuck, dedicated and done, shutdown) or crashed. */
  #threadExited(thread: HostThread): void {
    // Those declared dead but not confirmed died `killed` as far as other threads know.
    const killed = [...thread.actors, ...thread.dying];
    for (const id of thread.actors) this.#exited(id, 'killed');
    for (const id of [...thread.dying]) this.#confirmDead(thread, id);
    this.#orders.threadEnded(thread);
    this.#watchdog.threadEnded(thread);
    this.#stopAcks.get(thread.id)?.();
    this.#broadcast(Kind.threadDown, '', thread.id, killed);
    this.#host.threadDown(thread.id, new Set(killed));
    // A thread that failed to start is not replaced (that would loop); the next spawn starts one.
    if (this.#closing || thread.dedicated || thread.spare || !thread.isReady) return;
    const replacement = this.#pool.start(false);
    replacement.ready.then(
      () => this.events.emit('thread_replaced', { thread: thread.id, replacement: replacement.id, killed }),
      () => {},
    );
  }

  // ---- shutdown -------------------------------------------------------------

  shutdown(): Promise<void> {
    this.#shutdown ??= this.#stopEverything();
    return this.#shutdown;
  }

  async #stopEverything(): Promise<void> {
    this.#closing = true;
    // Main-thread actors first: supervisors must not restart what is being stopped.
    await this.#host.stopAll('shutdown', this.#shutdownTimeoutMs);
    const threads = this.#pool.all().filter((thread) => !thread.terminating);
    await Promise.all(
      threads.map(async (thread) => {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((resolve) => {
            this.#stopAcks.set(thread.id, resolve);
            this.#host.sendControl(thread.id, Kind.stopAll, '', 0, null);
          }),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, this.#shutdownTimeoutMs + 1000);
          }),
          thread.exited,
        ]);
        clearTimeout(timer);
        this.#stopAcks.delete(thread.id);
      }),
    );
    await Promise.all(this.#pool.all().map((thread) => this.#pool.terminate(thread)));
    this.#watchdog.close();
    this.#names.close();
    this.#host.abandonCalls(new ActorError('shutting_down', 'the actor system shut down before the reply'));
    this.#core.close();
    for (const port of this.#corePorts) port.close();
    this.#corePorts = [];
  }
}

function checkCore(core: unknown): void {
  if (core !== undefined && (typeof core !== 'object' || core === null)) throw new ActorError('bad_argument', 'core must be an object');
}

function positiveMs(option: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value <= MAX_TIMER_MS)) {
    throw new ActorError('bad_argument', `${option} must be a number of ms > 0 and < 2^31, got ${String(value)}`);
  }
  return value;
}
