// The write calls that come in bulk (add, update, finish, and the items of
// addMany/updateMany/finishMany) as objects whose body is a method: a
// request written as an object literal with an arrow `body` made a closure
// per job, and tsx (esbuild's keepNames) wraps every such closure in an
// `Object.defineProperty` call, which showed in the processors' profile.
// In a batch, add and finish run through `settleInto`: the call's reads,
// its writes and its outcome through callbacks passed inline to the reads,
// not an async function per job nor a wrapper awaiting the body's own.

import type { Transaction } from '../storage/interfaces.js';
import type { Job } from './interfaces.js';
import type { TypeKeys } from './job-keys.js';
import { addJob, addJobRead, finishJob, finishJobRead, updateJob } from './job-operations.js';
import { RECORD_HEADER_BYTES } from './job-record.js';
import type { JobState } from './job-record.js';
import type { Changes } from './job-transitions.js';
import type { Settled } from './interfaces.js';
import type { BodyOutcomes, SharedReads, WriteRequest } from './write-batcher.js';

/**
 * About how many bytes a write of one job costs in a transaction: its record
 * (header and data) and its keys (each key names the type and the id, at
 * most 3 UTF-8 bytes per UTF-16 unit). Only used to keep shared
 * transactions well below the storage limit.
 */
export function writeBytes(keys: TypeKeys, id: string, data: Buffer | undefined): number {
  return RECORD_HEADER_BYTES + 256 + 9 * (keys.type.length + id.length) + (data?.length ?? 0);
}

/** An `add` (or an item of `addMany`), checked; `now` is when it was called. */
export class AddCall implements WriteRequest<JobState> {
  readonly scope: string;
  readonly id: string;
  readonly bytes: number;
  readonly #keys: TypeKeys;
  readonly #changes: Changes;
  readonly #now: number;

  constructor(keys: TypeKeys, id: string, changes: Changes, now: number) {
    this.scope = keys.type;
    this.id = id;
    this.bytes = writeBytes(keys, id, changes.data);
    this.#keys = keys;
    this.#changes = changes;
    this.#now = now;
  }

  body(tx: Transaction, _userVersion: number, shared: SharedReads): Promise<JobState> {
    return addJob(tx, this.#keys, this.id, this.#changes, this.#now, shared, shared);
  }

  settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): void {
    const keys = this.#keys;
    let key: Buffer;
    try {
      key = keys.job(this.id);
    } catch (error) {
      outcomes.settle(userVersion, { status: 'rejected', reason: error as Error });
      return;
    }
    // As FinishCall's: inline callbacks, not an async function per job (and
    // no named arrow, which tsx would wrap in a name-setting call per job).
    // The reads addJob makes, in its order.
    shared.get(keys.typeTimeout).then(
      (timeout) => {
        let read: Promise<Buffer | undefined>;
        try {
          read = tx.get(key);
        } catch (error) {
          outcomes.settle(userVersion, { status: 'rejected', reason: error as Error });
          return;
        }
        read.then(
          (value) => outcomes.settle(userVersion, this.#addRead(tx, key, timeout, value, shared)),
          (error: unknown) => outcomes.settle(userVersion, { status: 'rejected', reason: error as Error }),
        );
      },
      (error: unknown) => outcomes.settle(userVersion, { status: 'rejected', reason: error as Error }),
    );
  }

  #addRead(tx: Transaction, key: Buffer, timeout: Buffer | undefined, value: Buffer | undefined, shared: SharedReads): Settled<unknown> {
    try {
      return { status: 'fulfilled', value: addJobRead(tx, this.#keys, this.id, this.#changes, this.#now, key, timeout, value, shared) };
    } catch (error) {
      return { status: 'rejected', reason: error as Error };
    }
  }
}

/** A worker's write to a job it holds (update or finish), with its data encoded. */
abstract class OwnJobCall {
  readonly scope: string;
  readonly id: string;
  readonly bytes: number;
  protected readonly keys: TypeKeys;
  protected readonly job: Job;
  protected readonly data: Buffer | undefined;

  constructor(keys: TypeKeys, job: Job, data: Buffer | undefined) {
    this.scope = keys.type;
    this.id = job.id;
    this.bytes = writeBytes(keys, job.id, data);
    this.keys = keys;
    this.job = job;
    this.data = data;
  }
}

/** A worker's `update` (or an item of `updateMany`) with its data encoded. */
export class UpdateCall extends OwnJobCall implements WriteRequest<Job> {
  body(tx: Transaction, userVersion: number, shared: SharedReads): Promise<Job> {
    return updateJob(tx, this.keys, this.job, this.data, userVersion, shared);
  }
}

/** A worker's `finish` (or an item of `finishMany`) with its data encoded. */
export class FinishCall extends OwnJobCall implements WriteRequest<'pending' | 'finished'> {
  body(tx: Transaction, _userVersion: number, shared: SharedReads): Promise<'pending' | 'finished'> {
    return finishJob(tx, this.keys, this.job, this.data, shared);
  }

  settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): void {
    let read: Promise<Buffer | undefined>;
    let key: Buffer;
    try {
      key = this.keys.job(this.id);
      read = tx.get(key);
    } catch (error) {
      outcomes.settle(userVersion, { status: 'rejected', reason: error as Error });
      return;
    }
    // Callbacks passed inline (not named, so tsx adds no name wrapper): one
    // context and two closures per job instead of an async function's frame.
    read.then(
      (value) => outcomes.settle(userVersion, this.#finishRead(tx, key, value, shared)),
      (error: unknown) => outcomes.settle(userVersion, { status: 'rejected', reason: error as Error }),
    );
  }

  #finishRead(tx: Transaction, key: Buffer, value: Buffer | undefined, shared: SharedReads): Settled<unknown> {
    try {
      return { status: 'fulfilled', value: finishJobRead(tx, this.keys, this.job, this.data, key, value, shared) };
    } catch (error) {
      return { status: 'rejected', reason: error as Error };
    }
  }
}
