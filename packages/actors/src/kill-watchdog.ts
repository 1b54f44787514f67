// The main thread's kill watchdog. A kill sent to a host thread is
// acknowledged by the thread once done; until then the watchdog looks, from
// the thread's status block (host-status.ts), at whether the thread is stuck
// (only terminating it stops it) or merely busy or slow (it makes progress,
// and takes the kill between two handlers however long that takes).

import { serialOfId } from './actor-id.js';
import { PROGRESS, RUNNING } from './host-status.js';
import type { ActorId, ThreadId } from './interfaces.js';
import type { HostThread } from './thread-pool.js';

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

export class KillWatchdog {
  readonly #killTimeoutMs: number;
  readonly #stuckThreadTimeoutMs: number;
  readonly #onStuck: (thread: HostThread) => void;
  /** Kills sent to host threads and not confirmed yet, by number. */
  readonly #kills = new Map<number, PendingKill>();
  #seq = 0;
  /**
   * One timer per host thread, re-armed (refresh) rather than created per
   * kill: a kill is often on the path of a restart, and creating a timer
   * there costs more than re-arming one.
   */
  readonly #timers = new Map<ThreadId, { timer: NodeJS.Timeout; armed: boolean }>();

  /**
   * @param killTimeoutMs how long a thread may stay without progress inside a handler of an actor it was told to kill
   * @param stuckThreadTimeoutMs how long it may stay without progress anywhere while a kill waits
   * @param onStuck terminates a thread deemed stuck
   */
  constructor(killTimeoutMs: number, stuckThreadTimeoutMs: number, onStuck: (thread: HostThread) => void) {
    this.#killTimeoutMs = killTimeoutMs;
    this.#stuckThreadTimeoutMs = stuckThreadTimeoutMs;
    this.#onStuck = onStuck;
  }

  /** A kill of `id` is being sent to `thread`: the number its acknowledgement will carry. */
  watch(thread: HostThread, id: ActorId): number {
    const ref = ++this.#seq;
    const progress = Atomics.load(thread.status, PROGRESS);
    this.#kills.set(ref, { thread, id, serial: serialOfId(id), progress, since: performance.now() });
    this.#arm(thread, this.#killTimeoutMs);
    return ref;
  }

  /** The thread acknowledged kill `ref`: which it was (undefined when it is not watched any more). */
  acknowledged(ref: number): { thread: HostThread; id: ActorId } | undefined {
    const kill = this.#kills.get(ref);
    if (kill !== undefined) this.#kills.delete(ref);
    return kill;
  }

  /** The thread ended: its kills are not waited for any more. */
  threadEnded(thread: HostThread): void {
    for (const [ref, kill] of this.#kills) if (kill.thread === thread) this.#kills.delete(ref);
    const watch = this.#timers.get(thread.id);
    if (watch !== undefined) clearTimeout(watch.timer);
    this.#timers.delete(thread.id);
  }

  /** Shutdown: nothing is watched any more. */
  close(): void {
    for (const watch of this.#timers.values()) clearTimeout(watch.timer);
    this.#timers.clear();
    this.#kills.clear();
  }

  #arm(thread: HostThread, ms: number): void {
    const watch = this.#timers.get(thread.id);
    if (watch?.armed === true) return; // it looks at every kill of the thread when it fires, then re-arms
    if (watch !== undefined && ms === this.#killTimeoutMs) {
      watch.armed = true;
      watch.timer.ref();
      watch.timer.refresh();
      return;
    }
    if (watch !== undefined) clearTimeout(watch.timer);
    this.#timers.set(thread.id, { timer: setTimeout(this.#fired, ms, thread), armed: true });
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
  readonly #fired = (thread: HostThread): void => {
    const watch = this.#timers.get(thread.id);
    if (watch === undefined) return;
    watch.armed = false;
    watch.timer.unref();
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
        this.#onStuck(thread);
        return;
      }
      // Looked at again within killTimeoutMs at most: the killed actor may enter a handler meanwhile.
      next = Math.min(next, left, this.#killTimeoutMs);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(thread, next);
  };
}
