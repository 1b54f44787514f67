// The actors that exited lately, as the bridge needs to know them. A call an
// actor makes to the core travels on a port of its own, apart from the
// messages that tell the main thread of the actor's death, so a call sent
// just before a kill can reach the bridge after the death was handled there.
// Such a call is late by one message's trip between threads: far less time
// than the exits of as many actors as are kept here take. (An actor id is
// never reused, so a remembered id never stands for a live actor.)

/** How many exited actors are remembered by default. */
export const RECENT_EXITS_KEPT = 4_096;

export class RecentExits {
  /** In the order they exited, oldest first. */
  readonly #ids = new Set<string>();
  readonly #kept: number;

  constructor(kept = RECENT_EXITS_KEPT) {
    this.#kept = kept;
  }

  add(id: string): void {
    this.#ids.add(id);
    if (this.#ids.size <= this.#kept) return;
    const oldest = this.#ids.values().next();
    if (oldest.done !== true) this.#ids.delete(oldest.value);
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }
}
