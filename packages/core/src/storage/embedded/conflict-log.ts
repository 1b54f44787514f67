// The resolver's memory: what each recent commit batch wrote, so that a
// committing transaction can be checked against every batch newer than its
// read version (FoundationDB's optimistic concurrency control). Point writes
// are also indexed by key for O(1) checks of point reads; ranges are checked
// per batch, which is cheap because a transaction is rarely more than a few
// batches behind. Batches leave the log once no live transaction can be
// older than them: none reads at an older version any more, or the 5-second
// life (plus a margin) has passed.

/** One batch's write set. */
export class BatchWrites {
  readonly version: number;
  /** Point writes (set, clear, atomic ops, versionstamped keys, write-conflict keys). */
  readonly keys: Buffer[] = [];
  readonly keyStrings: string[] = [];
  /** Cleared ranges, `[start, end)`. */
  readonly ranges: Array<[Buffer, Buffer]> = [];
  /** When the batch became durable, on the engine's clock; Infinity until then. */
  durableAt = Number.POSITIVE_INFINITY;
  /** Set once the batch takes no more transactions; its keys are then sorted once for range checks. */
  #sealed = false;
  #sorted: Buffer[] | undefined;

  constructor(version: number) {
    this.version = version;
  }

  seal(): void {
    this.#sealed = true;
  }

  /** Whether a point write of this batch falls in `[start, end)`. */
  writesInside(start: Buffer, end: Buffer): boolean {
    if (this.keys.length === 0) return false;
    if (!this.#sealed) {
      // Still growing: a scan beats re-sorting after every joining transaction.
      for (const key of this.keys) if (Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0) return true;
      return false;
    }
    this.#sorted ??= [...this.keys].sort(Buffer.compare);
    const sorted = this.#sorted;
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (Buffer.compare(sorted[mid] as Buffer, start) < 0) low = mid + 1;
      else high = mid;
    }
    const first = sorted[low];
    return first !== undefined && Buffer.compare(first, end) < 0;
  }

  /** Whether a cleared range of this batch contains `key`. */
  clears(key: Buffer): boolean {
    for (const [start, end] of this.ranges) {
      if (Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0) return true;
    }
    return false;
  }

  /** Whether a cleared range of this batch overlaps `[start, end)`. */
  clearsInside(start: Buffer, end: Buffer): boolean {
    for (const [clearStart, clearEnd] of this.ranges) {
      if (Buffer.compare(clearStart, end) < 0 && Buffer.compare(start, clearEnd) < 0) return true;
    }
    return false;
  }
}

export class ConflictLog {
  /** Newest version that wrote each key (latin1 string of the key bytes). */
  readonly #points = new Map<string, number>();
  /** Oldest first. */
  #batches: BatchWrites[] = [];
  #head = 0;
  /** Writes at versions <= this are forgotten. */
  #forgottenThrough = 0;

  constructor(forgottenThrough: number) {
    this.#forgottenThrough = forgottenThrough;
  }

  /** Starts recording a batch; it must be newer than every recorded batch. */
  open(version: number): BatchWrites {
    const batch = new BatchWrites(version);
    this.#batches.push(batch);
    return batch;
  }

  recordKey(batch: BatchWrites, key: Buffer, keyString: string): void {
    batch.keys.push(key);
    batch.keyStrings.push(keyString);
    this.#points.set(keyString, batch.version);
  }

  recordRange(batch: BatchWrites, start: Buffer, end: Buffer): void {
    batch.ranges.push([start, end]);
  }

  /** Whether the log still remembers every write newer than `readVersion`. */
  covers(readVersion: number): boolean {
    return readVersion >= this.#forgottenThrough;
  }

  /**
   * Whether any batch newer than `readVersion` wrote a key in `readKeys`
   * (latin1 strings) or inside one of `readRanges`.
   */
  conflicts(readVersion: number, readKeys: readonly string[], readRanges: ReadonlyArray<readonly [Buffer, Buffer]>): boolean {
    for (const key of readKeys) {
      const written = this.#points.get(key);
      if (written !== undefined && written > readVersion) return true;
    }
    let keyBuffers: Buffer[] | undefined;
    for (let i = this.#batches.length - 1; i >= this.#head; i--) {
      const batch = this.#batches[i] as BatchWrites;
      if (batch.version <= readVersion) break;
      if (batch.ranges.length > 0 && readKeys.length > 0) {
        keyBuffers ??= readKeys.map((key) => Buffer.from(key, 'latin1'));
        for (const key of keyBuffers) if (batch.clears(key)) return true;
      }
      for (const [start, end] of readRanges) {
        if (batch.writesInside(start, end) || batch.clearsInside(start, end)) return true;
      }
    }
    return false;
  }

  /**
   * Forgets the batches no live transaction can conflict with: those at or
   * below `throughVersion` (the oldest read version still in use; a
   * transaction only checks batches newer than its own), and those that
   * became durable before `cutoff` (engine clock; a transaction that old
   * fails as too old before it is checked).
   */
  forget(cutoff: number, throughVersion: number): void {
    while (this.#head < this.#batches.length) {
      const batch = this.#batches[this.#head] as BatchWrites;
      if (!(batch.durableAt < cutoff) && batch.version > throughVersion) break;
      for (const key of batch.keyStrings) if (this.#points.get(key) === batch.version) this.#points.delete(key);
      this.#forgottenThrough = batch.version;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#batches.length) {
      this.#batches = this.#batches.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Batches currently remembered. */
  get size(): number {
    return this.#batches.length - this.#head;
  }
}
