// A rate limit's state in the store: the recent starts, so that "at most
// `max` starts in any window of `perMs` milliseconds" holds for every
// window, not only for windows aligned on the epoch (with aligned windows,
// `max` starts at the end of one and `max` at the start of the next make
// 2 × max within a few milliseconds).
//
// Why a log of starts rather than a token bucket (or GCRA, its one-number
// form): a bucket bounds the long-run rate, but once it has refilled it lets
// a burst of `max` through right after the starts that emptied it, so a
// window of `perMs` may hold up to 2 × max − 1 starts. Only the starts
// themselves tell how many fall in the window that ends now.
//
// The log keeps one entry per take (its time and how many jobs it started),
// so a take of a batch costs one entry, and at most RATE_LOG_ENTRIES of
// them: past that, the two entries closest in time become one, at the later
// time. That moves starts later, never earlier, so the log may hold a take
// back a little longer than needed but never lets one more start through.
// A take reads the row, keeps the entries still in the window that ends at
// its clock's now, and writes the row back with its own starts, in its own
// transaction: the state stays one small row, and what a take may start
// depends only on the row and the time it reads, so a retry of the
// transaction decides the same way. Times are read from the clock of the
// handle that runs the take (see JobsClock); an entry is never put before
// the latest one, so clocks of different processes a little apart, or one
// a test moves back, can only hold takes back longer.
//
// Stored form: a version byte (1), then per entry the time (float64, ms
// since the epoch) and the count (uint32), little-endian. The form before
// it, 16 bytes (the start of an epoch-aligned window and its starts, two
// float64s), is read as one entry with those starts at the latest time
// they may have happened.

/** Entries a log keeps at most (a row of at most 1 + 64 × 12 bytes). */
export const RATE_LOG_ENTRIES = 64;

const VERSION = 1;
const ENTRY_BYTES = 12;
const WINDOW_ROW_BYTES = 16;

/** A rate: at most `max` starts in any window of `perMs` milliseconds. */
export interface Rate {
  max: number;
  perMs: number;
}

/** One take's starts: when (ms since the epoch) and how many. */
interface Entry {
  at: number;
  count: number;
}

/** A rate's starts in the window that ends at the time it was read. */
export class RateLog {
  readonly #entries: Entry[];
  readonly #now: number;
  /** Starts in the window. */
  readonly inWindow: number;

  private constructor(entries: Entry[], now: number) {
    this.#entries = entries;
    this.#now = now;
    let sum = 0;
    for (const entry of entries) sum += entry.count;
    this.inWindow = sum;
  }

  /** The log in `value` (a stored row, or `undefined` for none) at `now`, with the entries out of the window dropped. */
  static read(value: Buffer | undefined, rate: Rate, now: number): RateLog {
    const entries: Entry[] = [];
    if (value !== undefined) {
      if (value.length === WINDOW_ROW_BYTES) {
        // An epoch-aligned window's starts happened in it and before now.
        const start = value.readDoubleLE(0);
        const used = value.readDoubleLE(8);
        if (Number.isFinite(start) && used > 0) entries.push({ at: Math.min(now, start + rate.perMs), count: used });
      } else if (value.length >= 1 && value[0] === VERSION && (value.length - 1) % ENTRY_BYTES === 0) {
        for (let offset = 1; offset < value.length; offset += ENTRY_BYTES) {
          entries.push({ at: value.readDoubleLE(offset), count: value.readUInt32LE(offset + 8) });
        }
      }
    }
    // A start at `at` counts in every window that holds it: until `at + perMs`.
    return new RateLog(
      entries.filter((entry) => entry.at + rate.perMs > now),
      now,
    );
  }

  /** Starts the rate allows now. */
  room(rate: Rate): number {
    return Math.max(0, rate.max - this.inWindow);
  }

  /** When (ms since the epoch) the rate next allows a start, once `taken` more started now; `undefined` if it allows one now. */
  reopensAt(rate: Rate, taken = 0): number | undefined {
    let left = this.inWindow + taken;
    if (left < rate.max) return undefined;
    for (const entry of this.#entries) {
      left -= entry.count;
      if (left < rate.max) return entry.at + rate.perMs;
    }
    // Only the starts of this take are left: they end a window from now.
    return this.#latest() + rate.perMs;
  }

  /** The stored form of the log once `taken` jobs started now. */
  bytes(taken: number): Buffer {
    const entries = this.#entries.map((entry) => ({ ...entry }));
    if (taken > 0) {
      const at = this.#latest();
      const last = entries.at(-1);
      if (last !== undefined && last.at === at) last.count += taken;
      else entries.push({ at, count: taken });
    }
    while (entries.length > RATE_LOG_ENTRIES) {
      // The two entries closest in time become one at the later time: starts move later only.
      let closest = 0;
      for (let index = 1; index < entries.length - 1; index++) {
        const gap = (entries[index + 1] as Entry).at - (entries[index] as Entry).at;
        if (gap < (entries[closest + 1] as Entry).at - (entries[closest] as Entry).at) closest = index;
      }
      const [first, second] = entries.splice(closest, 2) as [Entry, Entry];
      entries.splice(closest, 0, { at: second.at, count: first.count + second.count });
    }
    const bytes = Buffer.alloc(1 + entries.length * ENTRY_BYTES);
    bytes[0] = VERSION;
    let offset = 1;
    for (const entry of entries) {
      bytes.writeDoubleLE(entry.at, offset);
      bytes.writeUInt32LE(Math.min(entry.count, 0xffff_ffff), offset + 8);
      offset += ENTRY_BYTES;
    }
    return bytes;
  }

  /** Now, or the latest entry's time if a clock put it later: the log's times never go back. */
  #latest(): number {
    const last = this.#entries.at(-1);
    return last === undefined ? this.#now : Math.max(this.#now, last.at);
  }
}
