// The ready loop of one thread: the actors with mail take turns, one step
// each (a bounded number of messages), so that one busy actor cannot starve
// the others on its thread, and a long run yields to the event loop now and
// then so that the thread still hears its ports (kills among them).

/** An actor as the loop sees it. */
export interface Steppable {
  /** In the loop's queue now (set and cleared by the loop). */
  queued: boolean;
  /** Handles some of its mail; reschedules itself if it has more. */
  step(): void;
}

/** Steps taken in one go before the loop yields to the event loop. */
const STEP_BUDGET = 10_000;
/** The consumed head of the queue is dropped once it is this long. */
const COMPACT_AT = 4096;

export class ReadyLoop {
  #ready: Steppable[] = [];
  #head = 0;
  #running = false;
  #kickScheduled = false;

  schedule(item: Steppable): void {
    if (item.queued) return;
    item.queued = true;
    this.#ready.push(item);
    if (!this.#running && !this.#kickScheduled) {
      this.#kickScheduled = true;
      queueMicrotask(this.#kick);
    }
  }

  readonly #kick = (): void => {
    this.#kickScheduled = false;
    this.run();
  };

  /** Gives each ready actor one step in turn until none is ready (or the budget is spent). Reentrant calls do nothing. */
  run(): void {
    if (this.#running) return;
    this.#running = true;
    const ready = this.#ready;
    let budget = STEP_BUDGET;
    while (this.#head < ready.length) {
      if (--budget === 0) {
        setImmediate(this.#kick);
        break;
      }
      const item = ready[this.#head++] as Steppable;
      item.queued = false;
      item.step();
    }
    if (this.#head === ready.length) {
      ready.length = 0;
      this.#head = 0;
    } else if (this.#head > COMPACT_AT) {
      this.#ready = ready.slice(this.#head);
      this.#head = 0;
    }
    this.#running = false;
  }
}
