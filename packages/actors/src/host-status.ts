// What a host thread tells the main thread without a message, through a few
// Int32 slots of a SharedArrayBuffer: the main thread's kill watchdog must
// tell a host that is stuck in one synchronous handler (only terminating the
// thread stops it) from one that is merely busy or starved of CPU on a loaded
// machine (terminating it would kill every co-hosted actor for nothing), and
// it cannot ask a thread that does not answer messages.

/** Set to 1 by the main thread after it posts kills on the thread's kill port; the host swaps it to 0 before it takes them. */
export const KILLS_WAITING = 0;
/**
 * Bumped by the host each time a handler (init, handleCast/Call/Info,
 * terminate) starts and each time a batch of messages arrives: unchanged
 * between two looks means the thread has been inside one piece of code in
 * between. Wraps around; only compared for equality.
 */
export const PROGRESS = 1;
/** The serial (`<thread.serial>`) of the actor whose handler is running synchronously now, 0 when none. */
export const RUNNING = 2;

const SLOTS = 3;

/**
 * A status block: shared for a host thread (the main thread reads it with
 * Atomics while the host writes it), a plain one for the main thread's own
 * host, whose actors nobody watches this way.
 */
export function createHostStatus(shared: boolean): Int32Array {
  return shared ? new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT)) : new Int32Array(SLOTS);
}

