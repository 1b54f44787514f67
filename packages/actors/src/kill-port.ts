// Kills from the main thread to a host thread travel apart from every other
// message, on a port of their own: a kill must not wait behind a flood of
// messages already queued for the thread (the main thread would deem the
// thread stuck and terminate it, with every co-hosted actor). The main thread
// posts them and raises KILLS_WAITING in the thread's status block
// (`postKills`); between two handlers the host reads the flag and, when it is
// up, takes the kills out of turn (`KillPort.take`); an idle host hears them
// from the port's listener. A message on the port is `[id, ref, id, ref, …]`.

import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { MAIN_THREAD } from './actor-id.js';
import { Kind } from './envelope.js';
import { KILLS_WAITING } from './host-status.js';
import type { ActorId } from './interfaces.js';
import type { Router } from './router.js';

/** The main thread's end of one host thread's kill port. */
export interface KillLine {
  readonly killPort: MessagePort;
  /** The thread's status block (see host-status.ts). */
  readonly status: Int32Array;
  /** The thread is being terminated: nothing is posted to it any more. */
  readonly terminating: boolean;
}

/** Sends kills (`[id, ref, …]`) on a thread's own kill port, and flags them for it to take between two handlers. */
export function postKills(thread: KillLine, kills: (ActorId | number)[]): void {
  if (thread.terminating) return;
  thread.killPort.postMessage(kills);
  // After the post: once the thread sees the flag, the kills are on its port.
  Atomics.store(thread.status, KILLS_WAITING, 1);
}

/** An actor as a kill finds it. */
export interface Killable {
  kill(): void;
}

/** A host thread's end of its kill port. */
export class KillPort {
  readonly #status: Int32Array;
  readonly #cells: ReadonlyMap<ActorId, Killable>;
  readonly #router: Router;
  readonly #runReady: () => void;
  #port: MessagePort | undefined;

  /**
   * @param cells the thread's live actors
   * @param router where the acknowledgements go
   * @param runReady runs what a kill made ready, after a kill heard by the listener
   */
  constructor(status: Int32Array, cells: ReadonlyMap<ActorId, Killable>, router: Router, runReady: () => void) {
    this.#status = status;
    this.#cells = cells;
    this.#router = router;
    this.#runReady = runReady;
  }

  attach(port: MessagePort): void {
    this.#port = port;
    port.on('message', (kills: unknown) => {
      this.#apply(kills);
      this.#runReady();
    });
  }

  /** Takes the kills the main thread has posted, if it has flagged any: cheap enough to call between any two handlers. */
  take(): void {
    // A plain read, not Atomics.load: this runs before every handler, where an Atomics.load costs a
    // visible share of the cast throughput. A stale read only delays the kill to the next look (or to the port's
    // listener); the watchdog sees the thread progress meanwhile.
    if (this.#status[KILLS_WAITING] === 0) return;
    Atomics.store(this.#status, KILLS_WAITING, 0);
    const port = this.#port;
    if (port === undefined) return;
    for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) this.#apply(next.message);
  }

  /** Each kill is acknowledged to the main thread after what the actor sent there before it died. */
  #apply(kills: unknown): void {
    if (!Array.isArray(kills)) return;
    for (let i = 0; i + 1 < kills.length; i += 2) {
      const id: unknown = kills[i];
      if (typeof id === 'string') this.#cells.get(id)?.kill();
      this.#router.sendControl(MAIN_THREAD, Kind.killAck, '', kills[i + 1] as number, null);
    }
    // Posted now, not at the end of the tick: this may run in the middle of a long batch,
    // and the main thread's watchdog waits for the acknowledgement.
    this.#router.flushTo(MAIN_THREAD);
  }
}
