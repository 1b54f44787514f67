// The resolver's memory: what each recent commit batch wrote, so that a
// committing transaction can be checked against every batch newer than its
// read version (FoundationDB's optimistic concurrency control). A point read
// is looked up in the write sets of each newer batch when there are few of
// them (the usual case: a batch or two behind), and in a key index of all
// batches when there are many; ranges are checked per batch, which is cheap
// because a transaction is rarely more than a few batches behind. Batches
// leave the log once no live transaction can be older than them: none reads
// at an older version any more, or the 5-second life (plus a margin) has
// passed.
//
// Most commits overlap nothing: a worker that reads, commits and waits for
// durability before its next transaction reads at the newest version, so no
// batch is newer than its read version and there is nothing to check. So
// the log keeps each transaction's own map of writes (no copy per key) and
// builds the key index only when a check is many batches behind: a commit
// costs the log O(1) per transaction, not a map entry per key written and
// another to forget it. (Pipelined workers, whose next transaction reads
// while the previous batch is being written, are a batch behind on nearly
// every commit: indexing every key for them cost more than the checks.)
// Those checks go through a filter of each large write set, built when a
// check first needs it (key-filter.ts): nearly every key read misses, and
// a miss the filter rules out costs a few bit tests instead of a lookup in
// each transaction's map.

import { FILTER_MIN_KEYS, KeyFilter, keyHash, keyHashes, keyHashOfBytes } from './key-filter.js';
import type { PointMap } from './point-map.js';

/** A set of point writes as the log looks in it. */
interface PointSet {
  readonly size: number;
  /** Whether it holds the key whose latin1 string is `keyString` (`hash`: its `keyHash`). */
  holds(keyString: string, hash: number): boolean;
  /** The `keyHash`es of its keys. */
  hashes(): Iterable<number>;
  values(): Iterable<{ readonly key: Buffer }>;
}

/**
 * A point write source (never changed after commit): a transaction's
 * buffered mutations (see point-map.ts), or a map of them by latin1 string.
 */
export type PointWrites = PointMap<{ readonly key: Buffer }> | ReadonlyMap<string, { readonly key: Buffer }>;

/** A map by latin1 string as a `PointSet`. */
class StringKeyedPoints implements PointSet {
  readonly #map: ReadonlyMap<string, { readonly key: Buffer }>;

  constructor(map: ReadonlyMap<string, { readonly key: Buffer }>) {
    this.#map = map;
  }

  get size(): number {
    return this.#map.size;
  }

  holds(keyString: string): boolean {
    return this.#map.has(keyString);
  }

  hashes(): Iterable<number> {
    return [...this.#map.keys()].map(keyHash);
  }

  values(): Iterable<{ readonly key: Buffer }> {
    return this.#map.values();
  }
}

/** One batch's write set. */
export class BatchWrites {
  readonly version: number;
  /** Point writes of the batch's transactions, one map each (until `ConflictLog.compact`). */
  pointMaps: PointSet[] = [];
  /** Per map of `pointMaps` (by index), its key filter once a check has needed it (see key-filter.ts). */
  pointFilters: Array<KeyFilter | undefined> = [];
  /** Point writes outside those maps: versionstamped keys and write-conflict keys. */
  extraKeys: Buffer[] = [];
  /**
   * Latin1 strings of the first `extraKeys`, made when first asked for (a
   * check its filter cannot rule out, the index, a compaction): most
   * batches' stamped keys are never looked up by string.
   */
  #extraStrings: string[] = [];
  /** Cleared ranges, `[start, end)`. */
  readonly ranges: Array<[Buffer, Buffer]> = [];
  /** When the batch became durable, on the engine's clock; Infinity until then. */
  durableAt = Number.POSITIVE_INFINITY;
  /** How many of `pointMaps` and `extraStrings` the log's key index holds. */
  indexedMaps = 0;
  indexedExtras = 0;
  /** `extraStrings` as a set, for checks made without the index; built when first needed. */
  #extraSet: Set<string> | undefined;
  #extraSetCount = 0;
  /** A filter of `extraKeys` (see key-filter.ts), over the first `#extraFilterCount`; built when first needed. */
  #extraFilter: KeyFilter | undefined;
  #extraFilterCount = 0;
  /** Set once the batch takes no more transactions; its keys are then sorted once for range checks. */
  #sealed = false;
  #sorted: Buffer[] | undefined;

  constructor(version: number) {
    this.version = version;
  }

  seal(): void {
    this.#sealed = true;
  }

  /** The latin1 strings of `extraKeys`, in order. */
  get extraStrings(): string[] {
    const strings = this.#extraStrings;
    const keys = this.extraKeys;
    for (let i = strings.length; i < keys.length; i++) strings.push((keys[i] as Buffer).toString('latin1'));
    return strings;
  }

  /** Replaces the extra keys (`strings`: their latin1 strings, in order). */
  setExtras(keys: Buffer[], strings: string[]): void {
    this.extraKeys = keys;
    this.#extraStrings = strings;
    this.#resetExtraSet();
  }

  /** Adds a point write outside the maps (`keyString`, if given, must be its latin1 string). */
  addExtra(key: Buffer, keyString?: string): void {
    if (keyString !== undefined && this.#extraStrings.length === this.extraKeys.length) this.#extraStrings.push(keyString);
    this.extraKeys.push(key);
  }

  /** Point writes recorded: every transaction's map, and the extra keys. */
  get keyCount(): number {
    let count = this.extraKeys.length;
    for (const map of this.pointMaps) count += map.size;
    return count;
  }

  /** Whether a point write of this batch falls in `[start, end)`. */
  writesInside(start: Buffer, end: Buffer): boolean {
    if (!this.#sealed) {
      // Still growing: a scan beats re-sorting after every joining transaction.
      for (const map of this.pointMaps) for (const { key } of map.values()) if (inside(key, start, end)) return true;
      for (const key of this.extraKeys) if (inside(key, start, end)) return true;
      return false;
    }
    this.#sorted ??= this.#sortedKeys();
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

  #sortedKeys(): Buffer[] {
    const keys = [...this.extraKeys];
    for (const map of this.pointMaps) for (const { key } of map.values()) keys.push(key);
    return keys.sort(Buffer.compare);
  }

  /**
   * Whether this batch wrote any of the points `keys` (latin1 strings of the
   * keys; `hashes` their `keyHash`es, in the same order). A large map is
   * looked up only for the keys its filter may hold.
   */
  writesAnyKey(keys: readonly string[], hashes: Int32Array): boolean {
    const maps = this.pointMaps;
    for (let m = 0; m < maps.length; m++) {
      const map = maps[m] as PointSet;
      if (map.size < FILTER_MIN_KEYS) {
        for (let k = 0; k < keys.length; k++) if (map.holds(keys[k] as string, hashes[k] as number)) return true;
        continue;
      }
      let filter = this.pointFilters[m];
      if (filter === undefined) {
        filter = KeyFilter.ofHashes(map.size, map.hashes());
        this.pointFilters[m] = filter;
      }
      for (let k = 0; k < keys.length; k++) {
        const hash = hashes[k] as number;
        if (filter.mayHave(hash) && map.holds(keys[k] as string, hash)) return true;
      }
    }
    const extras = this.extraKeys;
    if (extras.length === 0) return false;
    const filter = this.#extrasFilter(extras);
    let set: Set<string> | undefined;
    for (let k = 0; k < keys.length; k++) {
      if (!filter.mayHave(hashes[k] as number)) continue;
      set ??= this.#extrasSet(this.extraStrings);
      if (set.has(keys[k] as string)) return true;
    }
    return false;
  }

  /** A filter of `extraKeys`, brought up to date (rebuilt at its size once they have doubled). */
  #extrasFilter(extras: readonly Buffer[]): KeyFilter {
    if (this.#extraFilter === undefined || this.#extraFilterCount * 2 < extras.length) {
      this.#extraFilter = new KeyFilter(extras.length, undefined, extras);
      this.#extraFilterCount = extras.length;
    }
    const filter = this.#extraFilter;
    for (; this.#extraFilterCount < extras.length; this.#extraFilterCount++) filter.add(keyHashOfBytes(extras[this.#extraFilterCount] as Buffer));
    return filter;
  }

  /** `extraStrings` as a set, brought up to date. */
  #extrasSet(extras: readonly string[]): Set<string> {
    if (this.#extraSet === undefined || this.#extraSetCount > extras.length) {
      this.#extraSet = new Set();
      this.#extraSetCount = 0;
    }
    const set = this.#extraSet;
    for (; this.#extraSetCount < extras.length; this.#extraSetCount++) set.add(extras[this.#extraSetCount] as string);
    return set;
  }

  /** Drops the lookup set and filter of the extra keys (they were replaced). */
  #resetExtraSet(): void {
    this.#extraSet = undefined;
    this.#extraSetCount = 0;
    this.#extraFilter = undefined;
    this.#extraFilterCount = 0;
  }

  /** Write sets a check of one key against this batch looks in without the index. */
  get lookups(): number {
    return this.pointMaps.length + (this.extraKeys.length > 0 ? 1 : 0);
  }

  /** Whether a cleared range of this batch contains `key`. */
  clears(key: Buffer): boolean {
    for (const [start, end] of this.ranges) if (inside(key, start, end)) return true;
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

function inside(key: Buffer, start: Buffer, end: Buffer): boolean {
  return Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0;
}

function appendKeys(map: PointSet, keys: Buffer[], strings: string[]): void {
  for (const { key } of map.values()) {
    keys.push(key);
    strings.push(key.toString('latin1'));
  }
}

/**
 * Up to this many write sets (transactions' point maps, and a batch's other
 * keys) newer than a read version, a point read is checked against each of
 * them; past it, against the log's key index.
 */
const DIRECT_LOOKUPS = 32;

/** What a forgotten batch's slot holds until the array is compacted. */
const FORGOTTEN = new BatchWrites(0);

export class ConflictLog {
  /**
   * Newest version that wrote each key (latin1 string of the key bytes),
   * over the writes indexed so far (see `#index`).
   */
  readonly #points = new Map<string, number>();
  /** Oldest first. */
  #batches: BatchWrites[] = [];
  #head = 0;
  /** The first batch whose writes may not all be in `#points` yet. */
  #indexFrom = 0;
  /** The first batch `compactDurableBefore` has not compacted. */
  #compactFrom = 0;
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

  /** Records a transaction's point writes; the map is kept, so it must not change afterwards. */
  recordPoints(batch: BatchWrites, points: PointWrites): void {
    if (points.size > 0) batch.pointMaps.push(points instanceof Map ? new StringKeyedPoints(points) : (points as PointSet));
  }

  /** Records a point write outside the transactions' maps (its latin1 string is made if a check needs it). */
  recordKey(batch: BatchWrites, key: Buffer, keyString?: string): void {
    batch.addExtra(key, keyString);
  }

  recordRange(batch: BatchWrites, start: Buffer, end: Buffer): void {
    batch.ranges.push([start, end]);
  }

  /**
   * Keeps only the keys of a batch's point writes, not the transactions'
   * maps (and the values they hold): for a batch that stays in the log after
   * it is durable because an older read version is still in use.
   */
  compact(batch: BatchWrites): void {
    if (batch.pointMaps.length === 0 || batch.version <= this.#forgottenThrough) return;
    // Indexed keys first, so the index bookkeeping stays a count.
    const keys: Buffer[] = [];
    const strings: string[] = [];
    const extraStrings = batch.extraStrings;
    for (let m = 0; m < batch.indexedMaps; m++) appendKeys(batch.pointMaps[m] as PointSet, keys, strings);
    for (let e = 0; e < batch.indexedExtras; e++) {
      keys.push(batch.extraKeys[e] as Buffer);
      strings.push(extraStrings[e] as string);
    }
    const indexed = keys.length;
    for (let m = batch.indexedMaps; m < batch.pointMaps.length; m++) appendKeys(batch.pointMaps[m] as PointSet, keys, strings);
    for (let e = batch.indexedExtras; e < batch.extraKeys.length; e++) {
      keys.push(batch.extraKeys[e] as Buffer);
      strings.push(extraStrings[e] as string);
    }
    batch.pointMaps = [];
    batch.pointFilters = [];
    batch.indexedMaps = 0;
    batch.setExtras(keys, strings);
    batch.indexedExtras = indexed;
  }

  /**
   * Compacts (see `compact`) the batches still in the log that became
   * durable before `time` (engine clock). A batch is kept past its
   * durability while an older read version is in use, usually for a few
   * milliseconds: compacting only those kept longer spares the many
   * short-lived ones the copy, and keeps their write maps for direct checks.
   */
  compactDurableBefore(time: number): void {
    let i = Math.max(this.#compactFrom, this.#head);
    for (; i < this.#batches.length; i++) {
      const batch = this.#batches[i] as BatchWrites;
      if (!(batch.durableAt < time)) break;
      this.compact(batch);
    }
    this.#compactFrom = i;
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
    const newest = this.#batches[this.#batches.length - 1];
    // Nothing committed after the read version: the common case, and free.
    if (newest === undefined || this.#batches.length === this.#head || newest.version <= readVersion) return false;
    if (readKeys.length > 0) {
      if (this.#lookupsAfter(readVersion) <= DIRECT_LOOKUPS) {
        // A batch or two behind (the usual case): looking in their write
        // sets costs less than indexing every key they wrote (and forgetting
        // it again).
        const hashes = keyHashes(readKeys);
        for (let i = this.#batches.length - 1; i >= this.#head; i--) {
          const batch = this.#batches[i] as BatchWrites;
          if (batch.version <= readVersion) break;
          if (batch.writesAnyKey(readKeys, hashes)) return true;
        }
      } else {
        this.#index();
        for (const key of readKeys) {
          const written = this.#points.get(key);
          if (written !== undefined && written > readVersion) return true;
        }
      }
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

  /** Write sets of the batches newer than `readVersion`, counted up to just past DIRECT_LOOKUPS. */
  #lookupsAfter(readVersion: number): number {
    let lookups = 0;
    for (let i = this.#batches.length - 1; i >= this.#head && lookups <= DIRECT_LOOKUPS; i--) {
      const batch = this.#batches[i] as BatchWrites;
      if (batch.version <= readVersion) break;
      lookups += batch.lookups;
    }
    return lookups;
  }

  /**
   * Brings the key index up to date. Batches are indexed in version order,
   * so each key ends up with the newest version that wrote it; only the last
   * batch can still grow, so indexing resumes from there next time.
   */
  #index(): void {
    const batches = this.#batches;
    const points = this.#points;
    for (let i = Math.max(this.#indexFrom, this.#head); i < batches.length; i++) {
      const batch = batches[i] as BatchWrites;
      const { version, pointMaps, extraStrings } = batch;
      for (; batch.indexedMaps < pointMaps.length; batch.indexedMaps++) {
        for (const { key } of (pointMaps[batch.indexedMaps] as PointSet).values()) points.set(key.toString('latin1'), version);
      }
      for (; batch.indexedExtras < extraStrings.length; batch.indexedExtras++) {
        points.set(extraStrings[batch.indexedExtras] as string, version);
      }
    }
    this.#indexFrom = Math.max(this.#head, batches.length - 1);
  }

  /**
   * Forgets the batches no live transaction can conflict with: those at or
   * below `throughVersion` (the oldest read version still in use; a
   * transaction only checks batches newer than its own), and those that
   * became durable before `cutoff` (engine clock; a transaction that old
   * fails as too old before it is checked).
   */
  forget(cutoff: number, throughVersion: number): void {
    const points = this.#points;
    while (this.#head < this.#batches.length) {
      const batch = this.#batches[this.#head] as BatchWrites;
      if (!(batch.durableAt < cutoff) && batch.version > throughVersion) break;
      // Only what was indexed is in the index.
      for (let m = 0; m < batch.indexedMaps; m++) {
        for (const { key } of (batch.pointMaps[m] as PointSet).values()) {
          const keyString = key.toString('latin1');
          if (points.get(keyString) === batch.version) points.delete(keyString);
        }
      }
      const extraStrings = batch.indexedExtras > 0 ? batch.extraStrings : [];
      for (let e = 0; e < batch.indexedExtras; e++) {
        const key = extraStrings[e] as string;
        if (points.get(key) === batch.version) points.delete(key);
      }
      this.#forgottenThrough = batch.version;
      // The slot stays until the array is compacted below: drop the batch
      // itself now, or up to a thousand batches of writes would stay alive.
      this.#batches[this.#head] = FORGOTTEN;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#batches.length) {
      this.#indexFrom = Math.max(0, this.#indexFrom - this.#head);
      this.#compactFrom = Math.max(0, this.#compactFrom - this.#head);
      this.#batches = this.#batches.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Batches currently remembered. */
  get size(): number {
    return this.#batches.length - this.#head;
  }
}
