// The write calls that come in bulk (add, update, finish, and the items of
// addMany/updateMany/finishMany) as objects whose body is a method: a
// request written as an object literal with an arrow `body` made a closure
// per job, and tsx (esbuild's keepNames) wraps every such closure in an
// `Object.defineProperty` call, which showed in the processors' profile.
// In a batch, add and finish run through `settleInto`: the call's reads,
// its writes and its outcome in one async function, not a wrapper awaiting
// the body's own.

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

  async settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): Promise<void> {
    const keys = this.#keys;
    let outcome: Settled<unknown>;
    try {
      // The reads addJob makes, in its order.
      const key = keys.job(this.id);
      const timeout = await shared.get(keys.typeTimeout);
      const value = await tx.get(key);
      outcome = { status: 'fulfilled', value: addJobRead(tx, keys, this.id, this.#changes, this.#now, key, timeout, value, shared) };
    } catch (error) {
      outcome = { status: 'rejected', reason: error as Error };
    }
    outcomes.settle(userVersion, outcome);
  }
}

/** A worker's `update` (or an item of `updateMany`) with its data encoded. */
export class UpdateCall implements WriteRequest<Job> {
  readonly scope: string;
  readonly id: string;
  readonly bytes: number;
  readonly #keys: TypeKeys;
  readonly #job: Job;
  readonly #data: Buffer | undefined;

  constructor(keys: TypeKeys, job: Job, data: Buffer | undefined) {
    this.scope = keys.type;
    this.id = job.id;
    this.bytes = writeBytes(keys, job.id, data);
    this.#keys = keys;
    this.#job = job;
    this.#data = data;
  }

  body(tx: Transaction, userVersion: number, shared: SharedReads): Promise<Job> {
    return updateJob(tx, this.#keys, this.#job, this.#data, userVersion, shared);
  }
}

/** A worker's `finish` (or an item of `finishMany`) with its data encoded. */
export class FinishCall implements WriteRequest<'pending' | 'finished'> {
  readonly scope: string;
  readonly id: string;
  readonly bytes: number;
  readonly #keys: TypeKeys;
  readonly #job: Job;
  readonly #data: Buffer | undefined;

  constructor(keys: TypeKeys, job: Job, data: Buffer | undefined) {
    this.scope = keys.type;
    this.id = job.id;
    this.bytes = writeBytes(keys, job.id, data);
    this.#keys = keys;
    this.#job = job;
    this.#data = data;
  }

  body(tx: Transaction, _userVersion: number, shared: SharedReads): Promise<'pending' | 'finished'> {
    return finishJob(tx, this.#keys, this.#job, this.#data, shared);
  }

  async settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): Promise<void> {
    let outcome: Settled<unknown>;
    try {
      const key = this.#keys.job(this.id);
      const value = await tx.get(key);
      outcome = { status: 'fulfilled', value: finishJobRead(tx, this.#keys, this.#job, this.#data, key, value, shared) };
    } catch (error) {
      outcome = { status: 'rejected', reason: error as Error };
    }
    outcomes.settle(userVersion, outcome);
  }
}
