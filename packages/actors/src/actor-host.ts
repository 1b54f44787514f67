// The runtime of one thread (a host worker, or the main thread as thread 0):
// its actors, the operations they (and the system) perform, the messages
// that reach them, and what the death of actors elsewhere (a declared kill,
// a thread's end) means here. Its parts: routing by id (router.ts), kills
// taken out of turn (kill-port.ts), the ready loop (ready-loop.ts), the call
// table (call-table.ts), spawn requests (spawn-request.ts) and the system's
// own monitors (system-monitors.ts).

import type { MessagePort } from 'node:worker_threads';
import { ActorCell } from './actor-cell.js';
import { MAIN_THREAD, makeActorId, SYSTEM_ID, threadOfId } from './actor-id.js';
import { wrapCore } from './core-bridge.js';
import { type CallOwner, CallTable } from './call-table.js';
import type { CellHost, HostedCell } from './cell-host.js';
import { ActorError } from './errors.js';
import { type ActorEnvelope, type ActorKind, type BodyOf, type ControlEnvelope, type ControlKind, envelope, Kind, type RefOf } from './envelope.js';
import { errorInfo, isExitReason, malformedReason } from './exit-reason.js';
import { createHostStatus, PROGRESS } from './host-status.js';
import type { Coordinator, SpawnOrder } from './host-protocol.js';
import { KillPort } from './kill-port.js';
import { ReadyLoop } from './ready-loop.js';
import { type LocalDelivery, Router } from './router.js';
import { checkName, spawnRequest } from './spawn-request.js';
import { SystemMonitors } from './system-monitors.js';
import type { MessageSource, Uncopyable } from './wire.js';
import type {
  ActorDefinition,
  ActorId,
  ActorRef,
  Behaviour,
  ExitReason,
  MonitorRef,
  Remote,
  SpawnOptions,
  ThreadId,
} from './interfaces.js';

/** OTP's gen_server:call default. */
const DEFAULT_CALL_TIMEOUT_MS = 5000;

export class ActorHost implements CellHost, LocalDelivery {
  readonly thread: ThreadId;
  /** Name -> id: the system's table on the main thread, a replica elsewhere. */
  readonly names = new Map<string, ActorId>();
  coordinator: Coordinator | undefined;
  /** Thread-level messages (kinds >= 20) not handled here. */
  onControl: ((env: ControlEnvelope) => void) | undefined;
  /** What the main thread's kill watchdog reads of this thread (see host-status.ts); cells write PROGRESS and RUNNING. */
  readonly status: Int32Array;

  readonly #cells = new Map<ActorId, ActorCell>();
  #serial = 0;
  readonly #router: Router;
  readonly #kills: KillPort;
  readonly #calls = new CallTable();
  #monitorSeq = 0;
  readonly #systemMonitors = new SystemMonitors();
  readonly #ready = new ReadyLoop();
  #corePort: MessagePort | undefined;
  #core: Remote<unknown> | undefined;
  #emptyWaiters: (() => void)[] = [];

  constructor(thread: ThreadId, highestThread: ThreadId, status: Int32Array = createHostStatus(false)) {
    this.thread = thread;
    this.status = status;
    this.#router = new Router(thread, highestThread, this);
    this.#kills = new KillPort(status, this.#cells, this.#router, () => this.runReady());
  }

  /** This thread's end of the core bridge. */
  setCorePort(port: MessagePort | undefined): void {
    this.#corePort = port;
    this.#core = undefined;
  }

  core<T>(): Remote<T> {
    if (this.#corePort === undefined) throw new ActorError('no_core', 'this thread has no bridge to a core');
    this.#core ??= wrapCore<unknown>(this.#corePort);
    return this.#core as Remote<T>;
  }

  // ---- kills from the main thread ------------------------------------------

  /** The port on which the main thread sends kills to this host thread (see kill-port.ts). */
  attachKillPort(port: MessagePort): void {
    this.#kills.attach(port);
  }

  /** Takes the kills the main thread has flagged, if any: called between any two handlers. */
  takeKills(): void {
    this.#kills.take();
  }

  // ---- threads ------------------------------------------------------------

  addPeer(thread: ThreadId, port: MessageSource): void {
    this.#router.addPeer(thread, port);
    port.on('message', this.receiveBatch);
  }

  /**
   * Another thread is gone. The actors in `killed` (every actor there, when
   * undefined) died with it, `killed`, as every link, monitor and call here
   * must see; any other actor of that thread was dead already, so what waited
   * on it gets `noproc`, as for any dead pid.
   */
  threadDown(thread: ThreadId, killed?: ReadonlySet<ActorId>): void {
    this.#router.dropPeer(thread);
    const reasonOf = (id: ActorId): ExitReason => (killed === undefined || killed.has(id) ? 'killed' : 'noproc');
    this.#actorsGone((id) => threadOfId(id) === thread, reasonOf);
    this.#router.confirmDeadOn(thread);
    this.runReady();
  }

  /**
   * Declares an actor of another thread dead here and now, before its thread
   * confirms it (the main thread does so for a kill it issues: see
   * ActorSystem.requestKill). Calls, monitors and links held here on it hear
   * `reason` at once; from now on messages to it bounce here as to a dead
   * actor, and what its thread still sends from it is dropped, as sent after
   * its death, until `confirmDead`.
   */
  declareDead(id: ActorId, reason: ExitReason): void {
    this.#router.declareDead(id);
    this.#actorsGone((other) => other === id, () => reason);
  }

  /**
   * What the death of actors elsewhere (a kill declared here, a thread's
   * end) means on this thread: calls to them fail, the system's monitors on
   * them settle, and every cell here drops their monitors, hears the DOWN of
   * its monitors on them and the exit of its links to them.
   */
  #actorsGone(gone: (id: ActorId) => boolean, reasonOf: (id: ActorId) => ExitReason): void {
    this.#calls.failWhere(gone, reasonOf);
    this.#systemMonitors.settleWhere(gone, reasonOf);
    // A copy: an exit signal may end a cell, and so remove it from #cells.
    for (const cell of [...this.#cells.values()]) cell.othersGone(gone, reasonOf);
  }

  /** Its thread has confirmed the death (or is gone): nothing more can come from `id`. */
  confirmDead(id: ActorId): void {
    this.#router.confirmDead(id);
  }

  // ---- sending ------------------------------------------------------------

  /** Routes one message by its target's id (see Router.send). */
  send<K extends ActorKind>(kind: K, to: ActorId, from: ActorId, ref: RefOf<K>, body: BodyOf<K>): void {
    this.#router.send(kind, to, from, ref, body);
  }

  /** A thread-level message to `thread` (kinds >= 20), in order with actor messages to it. */
  sendControl<K extends ControlKind>(thread: ThreadId, kind: K, to: ActorId, ref: RefOf<K>, body: BodyOf<K>, from: ActorId = ''): void {
    this.#router.sendControl(thread, kind, to, ref, body, from);
  }

  /** Posts now, after what is queued for that thread (for transfers of ports). */
  postNow<K extends ControlKind>(thread: ThreadId, kind: K, ref: RefOf<K>, body: BodyOf<K>, transfer: readonly MessagePort[]): void {
    this.#router.postNow(thread, kind, ref, body, transfer);
  }

  /** Posts every outbox now (before a thread reports it is done). */
  flush(): void {
    this.#router.flush();
  }

  /** A message that cannot be copied to another thread: its sender hears of it where it can. */
  readonly uncopyable: Uncopyable = (thread, kind, to, from, ref, error) => {
    const info = errorInfo(error);
    const why = `it cannot be copied to thread ${thread} (${info.message})`;
    switch (kind) {
      case Kind.call:
        this.#calls.reject(ref as number, new ActorError('bad_argument', `call to ${to}: ${why}`));
        return;
      case Kind.reply:
        this.send(Kind.callFailed, to, from, ref as number, { error: { ...info, message: `the reply of ${from}: ${why}` } });
        return;
      case Kind.spawn:
        this.onControl?.(envelope(Kind.spawnFailed, '', '', ref as number, { error: { ...info, message: `spawn arguments: ${why}` } }));
        return;
      case Kind.spawnRequest:
        this.onControl?.(
          envelope(Kind.spawnOutcome, '', '', ref as number, { code: 'bad_argument', message: `spawn arguments: ${why}`, reason: undefined }),
        );
        return;
      default:
        process.emitWarning(`jobtree actors: a message to ${to || `thread ${thread}`} was dropped: ${why}`);
    }
  };

  // ---- receiving ----------------------------------------------------------

  /** The 'message' listener of every port: a batch of runs (see wire.ts). */
  readonly receiveBatch = (batch: unknown): void => {
    this.status[PROGRESS] = (this.status[PROGRESS] as number) + 1;
    this.#router.read(batch, true);
    this.runReady();
  };

  /**
   * A batch taken from a port out of turn (receiveMessageOnPort), in the
   * middle of some other operation: nothing is handled now, only queued and
   * scheduled, so no actor code runs inside that operation.
   */
  receiveOutOfTurn(batch: unknown): void {
    // Delivery schedules the actors that have mail; they run after the current operation.
    this.#router.read(batch, false);
  }

  /** Inside the delivery of a batch (see receiveOutOfTurn's caller, ActorSystem.requestKill). */
  get receiving(): boolean {
    return this.#router.receiving;
  }

  // What the router hands this thread (LocalDelivery).

  /** An idle actor handles a run of casts at once (the hot path of a cast stream). */
  casts(to: ActorId, from: ActorId, batch: readonly unknown[], start: number, n: number): void {
    this.#cells.get(to)?.deliverCasts(batch, start, n, from);
  }

  /** Out of turn: the casts are only queued, no handler runs. */
  queueCasts(to: ActorId, from: ActorId, batch: readonly unknown[], start: number, n: number): void {
    const cell = this.#cells.get(to);
    if (cell !== undefined) for (let j = start; j < start + n; j++) cell.deliver(envelope(Kind.cast, to, from, 0, batch[j]));
  }

  /** A thread-level message: the name table and the set of threads are kept here, the rest goes to `onControl`. */
  control(env: ControlEnvelope): void {
    switch (env.kind) {
      case Kind.nameSet:
        this.names.set(env.body, env.from);
        break;
      case Kind.nameCleared:
        if (this.names.get(env.body) === env.from) this.names.delete(env.body);
        break;
      case Kind.threadUp:
        this.addPeer(env.ref, env.body);
        break;
      case Kind.threadDown:
        this.threadDown(env.ref, Array.isArray(env.body) ? new Set(env.body) : undefined);
        break;
      default:
        this.onControl?.(env);
    }
  }

  /** A message to an actor here (or to the system's monitors); one to an actor that is not here bounces. */
  deliver(env: ActorEnvelope): void {
    switch (env.kind) {
      case Kind.reply: {
        // The reply resumes its caller's code: a kill of the caller that has come is taken first
        // (a killed caller's calls are dropped, so it never sees the reply).
        this.takeKills();
        this.#calls.reply(env.ref, env.body);
        return;
      }
      case Kind.callFailed:
        this.#calls.fail(env.ref, env.body);
        return;
    }
    const cell = this.#cells.get(env.to);
    if (cell === undefined) {
      if (env.to === SYSTEM_ID && env.kind === Kind.down) this.#systemMonitors.down(env.ref, env.body);
      else this.#router.bounce(env);
      return;
    }
    switch (env.kind) {
      case Kind.cast:
      case Kind.call:
        cell.deliver(env);
        return;
      case Kind.link:
        cell.linkedFrom(env.from);
        return;
      case Kind.unlink:
        cell.unlinkedFrom(env.from);
        return;
      case Kind.monitor:
        cell.watchedBy(env.ref, env.from);
        return;
      case Kind.demonitor:
        cell.unwatched(env.ref);
        return;
      case Kind.down:
        cell.monitorFired(env.ref, env.from, env.body);
        return;
      case Kind.exit:
        cell.exitSignal(env.from, env.body, false);
        return;
      case Kind.linkExit:
        cell.exitSignal(env.from, env.body, true);
        return;
      default:
        cell.exit(malformedReason(`${cell.id} got a message of unknown kind ${String((env as { kind: unknown }).kind)}`), true);
    }
  }

  // ---- the ready loop -----------------------------------------------------

  schedule(cell: HostedCell): void {
    this.#ready.schedule(cell);
  }

  /** Gives each ready actor one step in turn until none is ready (see ReadyLoop). */
  runReady(): void {
    this.#ready.run();
  }

  // ---- actors -------------------------------------------------------------

  /** Creates an actor here; `onStarted` hears the outcome of init before anything else. */
  startActor(order: SpawnOrder, behaviour: Behaviour<unknown, unknown, unknown>, onStarted: (id: ActorId, failure?: ExitReason) => void): void {
    const serial = ++this.#serial;
    const id = makeActorId(this.thread, serial);
    const cell = new ActorCell(this, id, serial, behaviour, order.name);
    this.#cells.set(id, cell);
    if (order.name !== undefined) this.names.set(order.name, id);
    // spawn_link: the link exists before the child runs, and the spawner hears of it
    // on the same path (so before) any exit signal the child may send.
    if (order.linkTo !== undefined) {
      cell.linkedFrom(order.linkTo);
      this.send(Kind.link, order.linkTo, id, 0, null);
    }
    if (order.monitor !== undefined) cell.watchedBy(order.monitor.ref, order.monitor.by);
    cell.start(order.args, onStarted);
  }

  /** Creates a passive cell here (an inbox: see ActorCell.passive); its name, if any, is registered by the caller. */
  startInbox(): ActorCell {
    const serial = ++this.#serial;
    const cell = new ActorCell(this, makeActorId(this.thread, serial), serial, undefined, undefined);
    this.#cells.set(cell.id, cell);
    return cell;
  }

  /** Called by a cell that ended. */
  forget(cell: HostedCell): void {
    this.#cells.delete(cell.id);
    if (cell.name !== undefined && this.names.get(cell.name) === cell.id) this.names.delete(cell.name);
    this.#calls.dropOwned(cell);
    if (this.#cells.size === 0 && this.#emptyWaiters.length > 0) {
      const waiters = this.#emptyWaiters;
      this.#emptyWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  actorExited(cell: HostedCell, reason: ExitReason): void {
    this.coordinator?.actorExited(cell.id, cell.name, reason);
  }

  killLocal(id: ActorId): void {
    this.#cells.get(id)?.kill();
    this.runReady();
  }

  /** Stops every actor here with `reason` (running terminate), killing those not done within `timeoutMs`. */
  async stopAll(reason: ExitReason, timeoutMs: number): Promise<void> {
    for (const cell of [...this.#cells.values()]) cell.exit(reason, true);
    this.runReady();
    if (this.#cells.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#emptyWaiters.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      for (const cell of [...this.#cells.values()]) cell.kill();
    }
    this.flush();
  }

  // ---- operations (ActorOperations, on behalf of an actor or the system) ----

  /** An ActorRef, an id, or a registered name -> an id (undefined: no such name). */
  resolve(target: ActorRef | ActorId | string): ActorId | undefined {
    if (typeof target === 'object' && target !== null && typeof target.id === 'string') return target.id;
    if (typeof target !== 'string') return undefined;
    // Names cannot look like ids (checkName), so the first character decides.
    if (target.charCodeAt(0) === 60 /* < */) return target;
    return this.names.get(target);
  }

  whereis(name: string): ActorId | undefined {
    return this.names.get(name);
  }

  cast(from: ActorId, to: ActorRef | string, msg: unknown): void {
    const id = typeof to === 'string' && to.charCodeAt(0) === 60 /* < */ ? to : this.resolve(to);
    if (id !== undefined) this.#router.cast(id, from, msg);
  }

  call(owner: CallOwner | undefined, from: ActorId, to: ActorRef | string, msg: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<unknown> {
    const id = this.resolve(to);
    if (id === undefined) return Promise.reject(new ActorError('noproc', `call to ${describeTarget(to)}: no such actor`, 'noproc'));
    if (!(timeoutMs >= 0)) return Promise.reject(new ActorError('bad_argument', `call timeout must be >= 0 ms, got ${timeoutMs}`));
    return this.#calls.open(owner, id, timeoutMs, (ref) => this.send(Kind.call, id, from, ref, msg));
  }

  /** Rejects every call still waiting (the system is going away). */
  abandonCalls(error: ActorError): void {
    this.#calls.abandon(error);
  }

  exit(from: ActorId, target: ActorRef | ActorId, reason: ExitReason | 'kill'): void {
    if (reason === 'kill') {
      this.kill(target);
      return;
    }
    if (!isExitReason(reason)) throw new ActorError('bad_argument', `exit: not an exit reason: ${String(reason)}`);
    const id = this.resolve(target);
    if (id !== undefined) this.send(Kind.exit, id, from, 0, reason);
  }

  kill(target: ActorRef | ActorId | string): void {
    const id = this.resolve(target);
    if (id === undefined) return;
    // An actor on this thread can be removed now: if this code runs, the thread is responsive.
    if (threadOfId(id) === this.thread) this.killLocal(id);
    else this.coordinator?.requestKill(id);
  }

  register(cell: HostedCell, name: string): void {
    checkName(name);
    const holder = this.names.get(name);
    if (holder !== undefined && holder !== cell.id) throw new ActorError('name_taken', `the name ${name} belongs to ${holder}`);
    if (cell.name !== undefined && cell.name !== name) {
      throw new ActorError('bad_argument', `${cell.id} is already registered as ${cell.name}`);
    }
    cell.name = name;
    this.names.set(name, cell.id);
    this.coordinator?.registerName(cell.id, name);
  }

  newMonitorRef(): MonitorRef {
    return `#Ref<${this.thread}.${++this.#monitorSeq}>`;
  }

  /** `system.monitor`: a monitor held by the system itself, settled by DOWN. */
  monitorFromSystem(target: ActorRef | ActorId | string): Promise<ExitReason> {
    const id = this.resolve(target);
    if (id === undefined) return Promise.resolve('noproc');
    const ref = this.newMonitorRef();
    const down = this.#systemMonitors.add(ref, id);
    this.send(Kind.monitor, id, SYSTEM_ID, ref, null);
    return down;
  }

  /** spawn / spawn_link / spawn_monitor on behalf of `spawner` (undefined: the system). */
  async spawn(spawner: HostedCell | undefined, definition: ActorDefinition<unknown, unknown>, args: unknown, options: SpawnOptions = {}): Promise<ActorRef> {
    const monitorRef = spawner !== undefined && options.monitor === true ? this.newMonitorRef() : undefined;
    const request = spawnRequest(definition, args, options, spawner?.id, monitorRef, this.thread === MAIN_THREAD);
    const coordinator = this.coordinator;
    if (coordinator === undefined) throw new ActorError('shutting_down', 'this thread is not attached to an actor system');
    if (monitorRef !== undefined) spawner?.holdSpawnMonitor(monitorRef);
    let id: ActorId;
    try {
      id = await coordinator.requestSpawn(request);
    } catch (error) {
      if (monitorRef !== undefined && error instanceof ActorError && error.code === 'killed') spawner?.spawnMonitorKilled(monitorRef);
      throw error;
    }
    if (monitorRef !== undefined) spawner?.spawnMonitorStarted(monitorRef, id);
    return monitorRef === undefined ? { id } : { id, monitorRef };
  }
}

function describeTarget(target: unknown): string {
  if (typeof target === 'string') return target;
  if (typeof target === 'object' && target !== null && 'id' in target) return String((target as ActorRef).id);
  return String(target);
}
