// The host threads: a bounded pool shared by many actors, plus dedicated
// threads started for one actor each. Starting a thread also wires it to
// every live thread with a MessageChannel of its own, so actors on two hosts
// talk directly and the main thread is never a hop in between.

import { THREAD_ENTRY, threadEntry } from './thread-entry.js';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { ActorHost } from './actor-host.js';
import { exposeCore } from './core-bridge.js';
import { Kind } from './envelope.js';
import { ActorError } from './errors.js';
import { createHostStatus } from './host-status.js';
import type { HostThreadData } from './host-protocol.js';
import type { ActorId, ThreadId } from './interfaces.js';
import type { MessageSource } from './wire.js';
import { hostExecArgv } from './worker-exec-argv.js';

export interface HostThread {
  readonly id: ThreadId;
  readonly worker: Worker;
  /** Runs one actor only (and ends with it). */
  dedicated: boolean;
  /** Started ahead of need, for the next dedicated actor; holds no actor. */
  spare: boolean;
  /** Resolves when the thread listens (its `ready` message arrived); rejects if it ends first. */
  readonly ready: Promise<void>;
  readonly isReady: boolean;
  markReady(): void;
  /** The actors living on it, as the main thread knows them. */
  readonly actors: Set<ActorId>;
  /** Spawn orders sent to it and not yet answered. */
  pendingSpawns: number;
  /** terminate() was called: its end is expected, not a crash. */
  terminating: boolean;
  /** Resolves when the thread has exited. */
  readonly exited: Promise<void>;
  /** The main thread's end of the thread's link to it (see HostThreadData.main). */
  readonly mainPort: MessagePort;
  /** Actors of it declared dead by the main thread whose death the thread has not confirmed yet. */
  readonly dying: Set<ActorId>;
  /** The main thread's end of its core bridge. */
  readonly corePort: MessagePort | undefined;
  /** The main thread's end of the thread's kill port (see kill-port.ts). */
  readonly killPort: MessagePort;
  /** What the thread publishes for the kill watchdog (see host-status.ts). */
  readonly status: Int32Array;
}

export interface ThreadPoolOptions {
  host: ActorHost;
  core: object | undefined;
  shutdownTimeoutMs: number;
  /** Called once when a thread exits, whether terminated or crashed. */
  onExit: (thread: HostThread) => void;
}

/** Each host thread runs host-thread.ts (see thread-entry.mjs). */
const HOST_ENTRY = threadEntry(import.meta.url, './host-thread');

export class ThreadPool {
  #threads = new Map<ThreadId, HostThread>();
  #nextId: ThreadId = 1;
  #spare: HostThread | undefined;
  #options: ThreadPoolOptions;
  #execArgv = hostExecArgv();

  constructor(options: ThreadPoolOptions) {
    this.#options = options;
  }

  start(dedicated: boolean): HostThread {
    const { host, core } = this.#options;
    const id = this.#nextId++;
    const peers: HostThreadData['peers'] = [];
    const mainLink = new MessageChannel();
    const killLink = new MessageChannel();
    const status = createHostStatus(true);
    const transfer: MessagePort[] = [mainLink.port2, killLink.port2];
    for (const other of this.#threads.values()) {
      if (other.terminating) continue;
      const channel = new MessageChannel();
      host.postNow(other.id, Kind.threadUp, id, channel.port1, [channel.port1]);
      peers.push({ thread: other.id, port: channel.port2 });
      transfer.push(channel.port2);
    }
    let corePort: MessagePort | undefined;
    let workerCore: MessagePort | undefined;
    if (core !== undefined) {
      const channel = new MessageChannel();
      exposeCore(core, channel.port1);
      corePort = channel.port1;
      workerCore = channel.port2;
      transfer.push(channel.port2);
    }
    const workerData: HostThreadData = {
      thread: id,
      main: mainLink.port2,
      kills: killLink.port2,
      status: status.buffer as SharedArrayBuffer,
      peers,
      names: [...host.names],
      core: workerCore,
      shutdownTimeoutMs: this.#options.shutdownTimeoutMs,
    };
    const worker = new Worker(THREAD_ENTRY, {
      workerData: { ...workerData, entry: HOST_ENTRY },
      transferList: transfer,
      name: `jobtree-host-${id}`,
      ...(this.#execArgv === undefined ? {} : { execArgv: this.#execArgv }),
    });
    let markReady = (): void => {};
    let failStart = (_error: Error): void => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    // A start failure is reported through the spawns that wait on it; never unhandled.
    ready.catch(() => {});
    let exited = (): void => {};
    let startError: Error | undefined;
    const thread: HostThread = {
      id,
      worker,
      dedicated,
      spare: false,
      ready,
      isReady: false,
      markReady: () => {
        (thread as { isReady: boolean }).isReady = true;
        markReady();
      },
      actors: new Set(),
      pendingSpawns: 0,
      terminating: false,
      exited: new Promise<void>((resolve) => {
        exited = resolve;
      }),
      mainPort: mainLink.port1,
      dying: new Set(),
      corePort,
      killPort: killLink.port1,
      status,
    };
    this.#threads.set(id, thread);
    host.addPeer(id, mainLink.port1 as unknown as MessageSource);
    // A thread that dies on its own (an uncaught exception in actor code) is
    // handled like a terminated one; without this listener it would crash the process.
    worker.on('error', (error) => {
      startError = error;
      process.emitWarning(`actor host thread ${id} crashed: ${error.message}`);
    });
    worker.once('exit', () => {
      if (!thread.isReady) failStart(startError ?? new ActorError('thread_failed', `actor host thread ${id} ended before it was ready`));
      if (this.#spare === thread) this.#spare = undefined;
      this.#threads.delete(id);
      corePort?.close();
      // What the thread sent before it ended is still delivered, as Node does for a Worker's own port.
      drain(mainLink.port1, host);
      mainLink.port1.close();
      killLink.port1.close();
      exited();
      this.#options.onExit(thread);
    });
    return thread;
  }

  /**
   * A thread for a dedicated actor. Starting a thread costs tens of
   * milliseconds (hundreds when it must load tsx), so after the first one a
   * spare is kept started (`keepSpare`): a dedicated spawn takes it.
   */
  startDedicated(): HostThread {
    const thread = this.#spare;
    if (thread === undefined) return this.start(true);
    this.#spare = undefined;
    thread.spare = false;
    thread.dedicated = true;
    return thread;
  }

  /** Starts the next spare, after a dedicated spawn (so that its start does not slow that spawn). */
  keepSpare(): void {
    if (this.#spare !== undefined) return;
    const spare = this.start(false);
    spare.spare = true;
    this.#spare = spare;
  }

  /** The pooled thread with the fewest actors (ties: the oldest). */
  pick(): HostThread | undefined {
    let best: HostThread | undefined;
    for (const thread of this.#threads.values()) {
      if (thread.dedicated || thread.spare || thread.terminating) continue;
      if (best === undefined || load(thread) < load(best)) best = thread;
    }
    return best;
  }

  get(id: ThreadId): HostThread | undefined {
    return this.#threads.get(id);
  }

  all(): HostThread[] {
    return [...this.#threads.values()];
  }

  terminate(thread: HostThread): Promise<void> {
    if (!thread.terminating) {
      thread.terminating = true;
      void thread.worker.terminate();
    }
    return thread.exited;
  }
}

/** Takes every message already waiting on `port`, out of turn (see ActorHost.receiveOutOfTurn). */
export function drain(port: MessagePort, host: ActorHost): void {
  for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) host.receiveOutOfTurn(next.message);
}

function load(thread: HostThread): number {
  return thread.actors.size + thread.pendingSpawns;
}
