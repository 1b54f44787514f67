// When an lmdb write becomes visible, ahead of its flush.
//
// With overlapping sync (lmdb-js's default off Windows) lmdb commits a write
// transaction in two steps: it writes the transaction's pages and a meta page
// marked "not yet flushed" (visible to every new reader from then on, and in
// the OS page cache, so a process crash keeps it), then syncs the file and
// writes a second, flushed meta page. Pages the last flushed transaction
// uses are never reused before the next flush, and on opening after an OS
// restart (another boot id) lmdb falls back to the flushed meta page: an OS
// crash can lose the commits not flushed yet, never corrupt the store.
//
// lmdb-js resolves a write's promise only after both steps (`committed` and
// `flushed` arrive in the same wake-up), but its writer thread already tells
// the main thread when the first step is done: the progress callback it
// passes to the native `startWriting` gets status 1 ("the transaction is
// visible, not yet unlocked"). That callback is lmdb-js internals, so this
// is the one place that depends on it: it wraps `startWriting` on the
// store's native environment and resolves the notice of the write that
// started it. lmdb-js calls `startWriting` for a new transaction at the end
// of the event turn it gathers writes in, not in the `put` that opens it, so
// a notice stays armed until the next `startWriting` takes it; the engine
// starts one write at a time, so that is its transaction's. Were it a later
// transaction's, the notice would still be true (lmdb commits its
// transactions in order), only later. lmdb-js may drop the status 1 call
// when the flush ends first (it closes the thread-safe function with the
// write); then the notice comes with the write's promise, as without it.
// Without overlapping sync (lmdb-js's choice on Windows) there is no status 1
// at all: every write is then acknowledged once flushed.

/** The part of lmdb-js's native environment this relies on. */
interface WritingEnv {
  startWriting(address: number, callback: (status: number) => unknown): unknown;
}

/** lmdb-js's progress status for "the write transaction is committed and visible". */
const VISIBLE = 1;

export class CommitVisibility {
  /** The notice of the write whose lmdb transaction is about to start. */
  #armed: (() => void) | undefined;

  private constructor() {}

  /**
   * Hooks the environment of an lmdb-js root database; `undefined` when it
   * does not have the shape this relies on (another lmdb-js version): writes
   * are then acknowledged when flushed.
   */
  static install(root: unknown): CommitVisibility | undefined {
    const env = (root as { env?: unknown }).env as Partial<WritingEnv> | undefined;
    const startWriting = env?.startWriting;
    if (env === undefined || typeof startWriting !== 'function') return undefined;
    const visibility = new CommitVisibility();
    Object.defineProperty(env, 'startWriting', {
      configurable: true,
      value(this: WritingEnv, address: number, callback: (status: number) => unknown): unknown {
        const notice = visibility.#armed;
        visibility.#armed = undefined;
        if (notice === undefined) return startWriting.call(this, address, callback);
        return startWriting.call(this, address, (status: number) => {
          const result = callback(status);
          if (status === VISIBLE) notice();
          return result;
        });
      },
    });
    return visibility;
  }

  /**
   * Calls `start` (which must open an lmdb write transaction) and returns a
   * promise that resolves when that transaction is visible, or never if
   * lmdb-js skips the notice (or another notice is armed before lmdb starts
   * the transaction): callers race it with the write's own promise.
   */
  track(start: () => void): Promise<void> {
    let notice!: () => void;
    const visible = new Promise<void>((resolve) => {
      notice = resolve;
    });
    this.#armed = notice;
    try {
      start();
    } catch (error) {
      this.#armed = undefined;
      throw error;
    }
    return visible;
  }
}
