// Whether jobs calls were answered in the current turn of the event loop.
// Callers whose calls were answered together (one durable commit answers a
// whole batch) usually call again in that same turn: a worker finishes the
// job its accept just brought. Such calls should wait for the turn to end
// and share a transaction, while a call made out of the blue (a timer, a
// request) may start its transaction at once.

export class SettleTurn {
  #marked = false;

  /** Whether `mark()` was called in this turn. */
  get marked(): boolean {
    return this.#marked;
  }

  /** Records that calls were answered in this turn; it ends at the next `setImmediate`. */
  mark(): void {
    if (this.#marked) return;
    this.#marked = true;
    setImmediate(this.#clear);
  }

  readonly #clear = (): void => {
    this.#marked = false;
  };
}
