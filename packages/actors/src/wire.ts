// The wire between two threads. Everything one thread sends another in one
// tick goes as one flat array in one postMessage: runs `kind, to, from, n,
// (ref, body) × n` (casts carry no ref: `body × n`), where consecutive
// messages with the same kind, target and sender (a cast loop) share one
// header. A batch then costs about what an array of the bare messages costs
// to clone, and sending allocates no object per message.

import { Kind, type PostTarget } from './envelope.js';
import type { ActorId, ThreadId } from './interfaces.js';

/** A port to another thread: where batches go, and where its batches come from. */
export interface MessageSource extends PostTarget {
  on(event: 'message', listener: (value: unknown) => void): unknown;
}

/**
 * Messages queued for one port in one tick go out as one array; past this
 * many the batch is posted at once, so the receiver starts while the sender
 * goes on.
 */
export const MAX_BATCH = 512;

/** The messages queued for one other thread, encoded as they will be posted. */
export class Outbox {
  readonly thread: ThreadId;
  readonly target: PostTarget;
  /** Messages queued. */
  count = 0;
  #queue: unknown[] = [];
  /** Where the length of the open run goes (written when the run closes). */
  #runAt = 0;
  #runLength = 0;
  #runKind = -1;
  #runTo: ActorId = '';
  #runFrom: ActorId = '';

  constructor(thread: ThreadId, target: PostTarget) {
    this.thread = thread;
    this.target = target;
  }

  /** Queues one message; returns how many are queued now (1: the outbox was empty until now). */
  push(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): number {
    const queue = this.#queue;
    if (this.count !== 0 && kind === this.#runKind && to === this.#runTo && from === this.#runFrom) {
      this.#runLength++;
      if (kind === Kind.cast) queue.push(body);
      else queue.push(ref, body);
    } else {
      if (this.count !== 0) queue[this.#runAt] = this.#runLength;
      this.#runAt = queue.length + 3;
      this.#runLength = 1;
      this.#runKind = kind;
      this.#runTo = to;
      this.#runFrom = from;
      if (kind === Kind.cast) queue.push(kind, to, from, 1, body);
      else queue.push(kind, to, from, 1, ref, body);
    }
    return ++this.count;
  }

  /**
   * The hot path of a cast loop: appends a cast to the open run if that run
   * is casts from `from` to `to` and the batch has room; false otherwise
   * (the caller then goes through `push`).
   */
  appendCast(to: ActorId, from: ActorId, body: unknown): boolean {
    if (this.count === 0 || this.#runKind !== Kind.cast || this.#runTo !== to || this.#runFrom !== from || this.count >= MAX_BATCH - 1) return false;
    this.#queue.push(body);
    this.count++;
    this.#runLength++;
    return true;
  }

  /** The batch to post (undefined when nothing is queued); the outbox is empty after. */
  take(): unknown[] | undefined {
    if (this.count === 0) return undefined;
    const batch = this.#queue;
    batch[this.#runAt] = this.#runLength;
    this.#queue = [];
    this.count = 0;
    return batch;
  }
}

/** One message alone, in the wire format (for a post that transfers ports, or one that must go alone). */
export function singleMessage(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): unknown[] {
  return kind === Kind.cast ? [kind, to, from, 1, body] : [kind, to, from, 1, ref, body];
}

/** What could not be copied: the message, and why. */
export type Uncopyable = (thread: ThreadId, kind: number, to: ActorId, from: ActorId, ref: number | string, error: unknown) => void;

/**
 * Posts a batch. One that fails to clone (a function or a class instance
 * with private state in some message) goes again message by message, and
 * each message that cannot be copied is reported to `uncopyable`, so that
 * one bad message neither crashes the thread nor takes the others with it.
 */
export function postBatch(outbox: Outbox, batch: unknown[], uncopyable: Uncopyable): void {
  try {
    outbox.target.postMessage(batch);
    return;
  } catch {
    // Found below, message by message.
  }
  let i = 0;
  while (i + 4 <= batch.length) {
    const kind = batch[i] as number;
    const to = batch[i + 1] as ActorId;
    const from = batch[i + 2] as ActorId;
    const n = batch[i + 3] as number;
    i += 4;
    for (let j = 0; j < n; j++) {
      const ref = kind === Kind.cast ? 0 : (batch[i++] as number | string);
      const body = batch[i++];
      try {
        outbox.target.postMessage(singleMessage(kind, to, from, ref, body));
      } catch (error) {
        uncopyable(outbox.thread, kind, to, from, ref, error);
      }
    }
  }
}

/** What reads a batch: a run of casts at once, any other message one by one. */
export interface RunReader {
  /** False: the sender's messages are not delivered (see Router.declareDead). */
  hears(from: ActorId): boolean;
  /** `batch[start .. start + n)` are cast bodies from `from` to `to`. */
  casts(to: ActorId, from: ActorId, batch: readonly unknown[], start: number, n: number): void;
  message(kind: number, to: ActorId, from: ActorId, ref: number | string, body: unknown): void;
}

/** Reads a batch run by run; a malformed batch is read up to where it goes wrong. */
export function readRuns(batch: readonly unknown[], reader: RunReader): void {
  const length = batch.length;
  let i = 0;
  while (i + 4 <= length) {
    const kind: unknown = batch[i];
    const to: unknown = batch[i + 1];
    const from: unknown = batch[i + 2];
    const n: unknown = batch[i + 3];
    i += 4;
    if (typeof kind !== 'number' || typeof to !== 'string' || typeof from !== 'string' || typeof n !== 'number') return;
    const heard = reader.hears(from);
    if (kind === Kind.cast) {
      if (i + n > length) return;
      if (heard) reader.casts(to, from, batch, i, n);
      i += n;
      continue;
    }
    if (i + 2 * n > length) return;
    if (heard) for (let j = i; j < i + 2 * n; j += 2) reader.message(kind, to, from, batch[j] as number | string, batch[j + 1]);
    i += 2 * n;
  }
}
