// The main thread's side of the runtime: it hosts `placement: 'main'` actors
// (thread 0), owns the pool of host threads, the system-wide directory of
// actors and names, the watchdog that terminates a host stuck in a
// synchronous loop, and shutdown.

import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { EventEmitter } from 'eventemitter3';
import { ActorHost } from './actor-host.js';
import { MAIN_THREAD, SYSTEM_ID, serialOfId, threadOfId } from './actor-id.js';
import { exposeCore } from './core-bridge.js';
import { CoreSlot } from './core-slot.js';
import { loadDefinition } from './define-actor.js';
import { ActorError, describeReason } from './errors.js';
import { type Envelope, Kind } from './envelope.js';
import { KILLS_WAITING, PROGRESS, RUNNING } from './host-status.js';
import type { Coordinator, SpawnOrder, SpawnOutcome, SpawnRequest } from './host-protocol.js';
import { MainInbox } from './inbox.js';
import { MAX_TIMER_MS } from './max-timer.js';
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

/** A kill sent to a host thread and not confirmed yet. */
interface PendingKill {
  thread: HostThread;
  id: ActorId;
  /** The serial of `id`: the thread is stuck in this actor while its RUNNING slot holds it. */
  serial: number;
  /** The thread's PROGRESS when the watchdog last saw it change (or when the kill was sent), and that time. */
  progress: number;
  since: number;
}

/** @see ActorSystemOptions.killTimeoutMs */
const DEFAULT_KILL_TIMEOUT_MS = 1000;
/** @see ActorSystemOptions.stuckThreadTimeoutMs */
const DEFAULT_STUCK_THREAD_TIMEOUT_MS = 10_000;
/** @see ActorSystemOptions.coreWaitMs */
const DEFAULT_CORE_WAIT_MS = 5000;

interface SpawnOrderState {
  thread: HostThread;
  request: SpawnRequest;
  resolve: (id: ActorId) => void;
  reject: (error: ActorError) => void;
}

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
  return new ThreadedActorSystem(options);
}

class ThreadedActorSystem implements ActorSystem, Coordinator {
  readonly id: ActorId = SYSTEM_ID;
  readonly events = new EventEmitter<ActorSystemEvents>();
  readonly #host = new ActorHost(MAIN_THREAD, 0);
  readonly #pool: ThreadPool;
  readonly #killTimeoutMs: number;
  readonly #stuckThreadTimeoutMs: number;
  readonly #shutdownTimeoutMs: number;
  readonly #directory = new Map<ActorId, DirectoryEntry>();
  /** Names promised to spawns under way. */
  readonly #reserved = new Set<string>();
  readonly #orders = new Map<number, SpawnOrderState>();
  #orderSeq = 0;
  /** Kills sent to host threads and not confirmed yet, by number. */
  readonly #kills = new Map<number, PendingKill>();
  /**
   * One kill watchdog per host thread, re-armed (refresh) rather than created
   * per kill: a kill is often on the path of a restart, and creating a timer
   * there costs more than re-arming one.
   */
  readonly #watchdogs = new Map<ThreadId, { timer: NodeJS.Timeout; armed: boolean }>();
  /** Names of killed actors whose thread has not confirmed the death yet -> that actor (see requestKill). */
  readonly #dyingNames = new Map<string, ActorId>();
  readonly #nameWaiters = new Map<string, (() => void)[]>();
  #killSeq = 0;
  readonly #stopAcks = new Map<ThreadId, () => void>();
  #closing = false;
  #shutdown: Promise<void> | undefined;
  #corePorts: MessagePort[] = [];
  readonly #core: CoreSlot;

  constructor(options: ActorSystemOptions) {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1) throw new ActorError('bad_argument', `threads must be a positive integer, got ${threads}`);
    this.#killTimeoutMs = positiveMs('killTimeoutMs', options.killTimeoutMs ?? DEFAULT_KILL_TIMEOUT_MS);
    this.#stuckThreadTimeoutMs = positiveMs('stuckThreadTimeoutMs', options.stuckThreadTimeoutMs ?? DEFAULT_STUCK_THREAD_TIMEOUT_MS);
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
    const name = options.name;
    if (name !== undefined) {
      checkName(name);
      const holder = this.#host.names.get(name);
      if (holder !== undefined || this.#reserved.has(name)) {
        throw new ActorError('name_taken', `the name ${name} belongs to ${holder ?? 'an actor being spawned'}`);
      }
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
      await this.#nameReleased(name);
      if (this.#closing) throw new ActorError('shutting_down', 'the actor system is shutting down');
      const holder = this.#host.names.get(name);
      if (holder !== undefined || this.#reserved.has(name)) {
        throw new ActorError('name_taken', `the name ${name} belongs to ${holder ?? 'an actor being spawned'}`);
      }
      this.#reserved.add(name);
    }
    try {
      if (request.placement === 'main') return await this.#spawnHere(request);
      if (request.placement === 'dedicated') {
        try {
          return await this.#spawnOn(this.#pool.startDedicated(), request);
        } finally {
          if (!this.#closing) this.#pool.keepSpare();
        }
      }
      return await this.#spawnOn(this.#pool.pick() ?? this.#pool.start(false), request);
    } finally {
      if (name !== undefined) this.#reserved.delete(name);
    }
  }

  async #spawnOn(thread: HostThread, request: SpawnRequest): Promise<ActorId> {
    thread.pendingSpawns++;
    try {
      await thread.ready;
    } catch (error) {
      thread.pendingSpawns--;
      throw new ActorError('thread_failed', `spawn of ${request.module}: host thread ${thread.id} failed to start: ${(error as Error).message}`);
    }
    return new Promise<ActorId>((resolve, reject) => {
      const ref = ++this.#orderSeq;
      this.#orders.set(ref, { thread, request, resolve, reject });
      this.#host.sendControl(thread.id, Kind.spawn, '', ref, orderOf(request));
    });
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
    if (name !== undefined) this.#nameSet(name, id);
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
   * the watchdog decides whether it is stuck (see #watchdogFired).
   */
  requestKill(id: ActorId): void {
    const thread = this.#pool.get(threadOfId(id));
    if (thread === undefined || thread.terminating) return;
    const ref = ++this.#killSeq;
    const progress = Atomics.load(thread.status, PROGRESS);
    this.#kills.set(ref, { thread, id, serial: serialOfId(id), progress, since: performance.now() });
    this.#armWatchdog(thread, this.#killTimeoutMs);
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
    if (entry.name !== undefined) this.#dyingNames.set(entry.name, id);
    this.#host.declareDead(id, 'killed');
    this.#exited(id, 'killed');
  }

  #armWatchdog(thread: HostThread, ms: number): void {
    const watchdog = this.#watchdogs.get(thread.id);
    if (watchdog?.armed === true) return; // it looks at every kill of the thread when it fires, then re-arms
    if (watchdog !== undefined && ms === this.#killTimeoutMs) {
      watchdog.armed = true;
      watchdog.timer.ref();
      watchdog.timer.refresh();
      return;
    }
    if (watchdog !== undefined) clearTimeout(watchdog.timer);
    this.#watchdogs.set(thread.id, { timer: setTimeout(this.#watchdogFired, ms, thread), armed: true });
  }

  /**
   * A thread has kills it has not confirmed. A busy or slow thread (a long
   * batch, GC, a loaded machine) is not stuck: it makes progress (it starts
   * handlers, takes batches) and takes the kill between two handlers, so it
   * is left alone however long that takes. The thread is deemed stuck, and
   * terminated with every actor on it, only when it has made no progress
   * for killTimeoutMs while inside a handler of an actor it was told to kill
   * (a synchronous loop there: nothing else can stop it), or for
   * stuckThreadTimeoutMs wherever it is (another actor's loop, a loop in a
   * timer callback or after an await, where no actor can be blamed).
   */
  readonly #watchdogFired = (thread: HostThread): void => {
    const watchdog = this.#watchdogs.get(thread.id);
    if (watchdog === undefined) return;
    watchdog.armed = false;
    watchdog.timer.unref();
    const now = performance.now();
    const progress = Atomics.load(thread.status, PROGRESS);
    const running = Atomics.load(thread.status, RUNNING);
    let next = Number.POSITIVE_INFINITY;
    for (const kill of this.#kills.values()) {
      if (kill.thread !== thread) continue;
      if (kill.progress !== progress) {
        kill.progress = progress;
        kill.since = now;
      }
      const limit = running === kill.serial ? this.#killTimeoutMs : this.#stuckThreadTimeoutMs;
      const left = kill.since + limit - now;
      if (left <= 1) {
        void this.#pool.terminate(thread);
        return;
      }
      // Looked at again within killTimeoutMs at most: the killed actor may enter a handler meanwhile.
      next = Math.min(next, left, this.#killTimeoutMs);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#armWatchdog(thread, next);
  };

  /** The thread confirmed the death of an actor the main thread declared dead (or is gone). */
  #confirmDead(thread: HostThread, id: ActorId): void {
    if (!thread.dying.delete(id)) return;
    this.#host.confirmDead(id);
    for (const [name, holder] of this.#dyingNames) {
      if (holder !== id) continue;
      this.#dyingNames.delete(name);
      const waiters = this.#nameWaiters.get(name);
      this.#nameWaiters.delete(name);
      if (waiters !== undefined) for (const wake of waiters) wake();
    }
  }

  /** Resolves once no killed actor awaiting its thread's confirmation held `name`. */
  async #nameReleased(name: string): Promise<void> {
    while (this.#dyingNames.has(name)) {
      await new Promise<void>((resolve) => {
        const waiters = this.#nameWaiters.get(name);
        if (waiters === undefined) this.#nameWaiters.set(name, [resolve]);
        else waiters.push(resolve);
      });
    }
  }

  registerName(id: ActorId, name: string): void {
    if (this.#dyingNames.has(name)) {
      // Taken by a killed actor whose thread has not confirmed yet: the new holder gets it after.
      void this.#nameReleased(name).then(() => {
        if (!this.#closing && this.#mayStillRun(id)) this.registerName(id, name);
      });
      return;
    }
    const holder = this.#host.names.get(name);
    const entry = this.#directory.get(id);
    if ((holder !== undefined && holder !== id) || this.#reserved.has(name)) {
      // Two threads took the same name at once: the later one loses, as a crash.
      this.#host.exit(SYSTEM_ID, id, { error: { name: 'ActorError', code: 'name_taken', message: `the name ${name} belongs to ${holder}` } });
      return;
    }
    if (entry !== undefined) entry.name = name;
    this.#nameSet(name, id);
  }

  /** Alive, or possibly still in init (its spawn unanswered). */
  #mayStillRun(id: ActorId): boolean {
    if (this.#directory.has(id)) return true;
    const thread = threadOfId(id);
    for (const order of this.#orders.values()) if (order.thread.id === thread) return true;
    return false;
  }

  actorExited(id: ActorId, _name: string | undefined, reason: ExitReason): void {
    this.#exited(id, reason);
  }

  // ---- thread-level messages from host threads ----------------------------

  #control(env: Envelope): void {
    switch (env.kind) {
      case Kind.ready:
        this.#pool.get(Number(env.ref))?.markReady();
        break;
      case Kind.spawned:
      case Kind.spawnFailed:
        this.#orderAnswered(env);
        break;
      case Kind.spawnRequest: {
        const { request, thread } = env.body as { request: SpawnRequest; thread: ThreadId };
        this.requestSpawn(request).then(
          (id) => this.#answerSpawn(thread, env.ref as number, { id }),
          (error: unknown) => {
            const failure = error instanceof ActorError ? error : new ActorError('bad_argument', String(error));
            this.#answerSpawn(thread, env.ref as number, { code: failure.code, message: failure.message, reason: failure.reason });
          },
        );
        break;
      }
      case Kind.exited:
        this.#exited(env.to, env.body as ExitReason);
        break;
      case Kind.register: {
        const { id, name } = env.body as { id: ActorId; name: string };
        this.registerName(id, name);
        break;
      }
      case Kind.killRequest:
        this.#host.kill(env.to);
        break;
      case Kind.killAck: {
        const kill = this.#kills.get(env.ref as number);
        if (kill !== undefined) {
          this.#kills.delete(env.ref as number);
          this.#confirmDead(kill.thread, kill.id);
        }
        break;
      }
      case Kind.stopped:
        this.#stopAcks.get(env.ref as ThreadId)?.();
        break;
      default:
    }
  }

  #orderAnswered(env: Envelope): void {
    const order = this.#orders.get(env.ref as number);
    if (order === undefined) return;
    this.#orders.delete(env.ref as number);
    order.thread.pendingSpawns--;
    if (env.kind === Kind.spawned) {
      this.#started(env.body as ActorId, order.thread.id, order.request.name, order.request.placement);
      order.resolve(env.body as ActorId);
    } else {
      order.reject(initFailed(order.request, env.body as ExitReason));
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
    if (entry.name !== undefined && this.#host.names.get(entry.name) === id) this.#nameCleared(entry.name, id);
    this.events.emit('exited', { id, name: entry.name, reason, thread: entry.thread });
    if (thread?.dedicated && thread.actors.size === 0 && thread.pendingSpawns === 0) void this.#pool.terminate(thread);
  }

  #nameSet(name: string, id: ActorId): void {
    this.#host.names.set(name, id);
    this.#broadcast(Kind.nameSet, id, 0, name);
  }

  #nameCleared(name: string, id: ActorId): void {
    this.#host.names.delete(name);
    this.#broadcast(Kind.nameCleared, id, 0, name);
  }

  #broadcast(kind: number, from: ActorId, ref: number, body: unknown): void {
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
    for (const [ref, order] of [...this.#orders]) {
      if (order.thread !== thread) continue;
      this.#orders.delete(ref);
      order.reject(new ActorError('killed', `spawn of ${order.request.module}: its host thread ${thread.id} ended`, 'killed'));
    }
    for (const [ref, kill] of this.#kills) if (kill.thread === thread) this.#kills.delete(ref);
    const watchdog = this.#watchdogs.get(thread.id);
    if (watchdog !== undefined) clearTimeout(watchdog.timer);
    this.#watchdogs.delete(thread.id);
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
    for (const watchdog of this.#watchdogs.values()) clearTimeout(watchdog.timer);
    this.#watchdogs.clear();
    this.#kills.clear();
    this.#dyingNames.clear();
    for (const waiters of this.#nameWaiters.values()) for (const wake of waiters) wake();
    this.#nameWaiters.clear();
    this.#host.abandonCalls(new ActorError('shutting_down', 'the actor system shut down before the reply'));
    this.#core.close();
    for (const port of this.#corePorts) port.close();
    this.#corePorts = [];
  }
}

/** Sends kills (`[id, ref, …]`) on a thread's own kill port, and flags them for it to take between two handlers. */
function postKills(thread: HostThread, kills: (ActorId | number)[]): void {
  if (thread.terminating) return;
  thread.killPort.postMessage(kills);
  // After the post: once the thread sees the flag, the kills are on its port.
  Atomics.store(thread.status, KILLS_WAITING, 1);
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

function orderOf(request: SpawnRequest): SpawnOrder {
  return {
    module: request.module,
    exportName: request.exportName,
    args: request.args,
    name: request.name,
    linkTo: request.linkTo,
    monitor: request.monitor,
  };
}

function initFailed(request: SpawnRequest, reason: ExitReason): ActorError {
  if (reason === 'killed') return new ActorError('killed', `spawn of ${request.module}: killed during init`, reason);
  return new ActorError('init_failed', `spawn of ${request.module}: init failed (${describeReason(reason)})`, reason);
}
