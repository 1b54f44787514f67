// The write calls that come in bulk (add, update, finish, complete, fail,
// failAttempt, and the items of addMany/updateMany/finishMany/completeMany/
// failMany) as objects whose work is a method
// (`settleInto`, see SettlingRequest): a request written as an object
// literal with an arrow `body` made a closure per job, and tsx (esbuild's
// keepNames) wraps every such closure in an `Object.defineProperty` call,
// which showed in the processors' profile. On the embedded engine every
// one of them makes its reads at once (`readFirst`, before any call of the
// batch writes) and then runs whole in `settleInto`, with no promise at
// all. Elsewhere they go through `get`'s promise: an add's reads, its
// writes and its outcome through callbacks passed inline to the reads, not
// an async function per job nor a wrapper awaiting the body's own.
// The functions at the end make these requests from a call's arguments.

import { readsAtOnce } from '../storage/fast-paths.js';
import type { Transaction } from '../storage/interfaces.js';
import { JobsError } from '../errors.js';
import type { AddOptions, FailAttemptOptions, Job, JobErrorInput } from './interfaces.js';
import { encodeJobData } from './job-data.js';
import { checkBooleanOption, checkId, checkJobScheduledTime, checkPriority, describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';
import { addJobRead, finishJobRead, updateJobRead } from './job-operations.js';
import { endJobRead, failAttemptRead } from './job-outcomes.js';
import type { RunOutcome } from './job-outcomes.js';
import { MAX_ATTEMPTS, RECORD_HEADER_BYTES } from './job-record.js';
import { checkGroup } from './job-groups.js';
import { encodeJobError } from './outcome-rows.js';
import { encodeRetryPolicy } from './job-retry-policy.js';
import { encodeTraceContext } from './job-trace-context.js';
import type { JobState } from './job-record.js';
import type { Changes } from './job-transitions.js';
import type { Settled } from './interfaces.js';
import type { SharedReads } from './shared-reads.js';
import type { BodyOutcomes, SettlingRequest, WriteRequest } from './write-requests.js';

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
export class AddCall implements SettlingRequest<JobState> {
  readonly scope: string;
  readonly id: string;
  readonly bytes: number;
  readonly #keys: TypeKeys;
  readonly #changes: Changes;
  readonly #now: number;
  /** This attempt's reads, made by `readFirst`: the job's data key, the type's timeout and the record, or why they failed. */
  #key: Buffer | undefined = undefined;
  #timeout: Buffer | undefined = undefined;
  #value: Buffer | undefined = undefined;
  #readFailure: unknown = undefined;
  #readDone = false;

  constructor(keys: TypeKeys, id: string, changes: Changes, now: number) {
    this.scope = keys.type;
    this.id = id;
    this.bytes = writeBytes(keys, id, changes.data);
    this.#keys = keys;
    this.#changes = changes;
    this.#now = now;
  }

  /**
   * Where the transaction answers reads at once (the embedded engine), makes
   * the add's reads now, as addJob makes them (the type's timeout, shared
   * by the attempt's adds, then the record), before any call of the batch
   * writes; elsewhere, or through a wrapper whose `get` is not the
   * transaction's own, nothing (see OwnJobCall.readFirst).
   */
  readFirst(tx: Transaction, shared: SharedReads): void {
    const now = readsAtOnce(tx, 'get');
    if (now === undefined) return;
    this.#readDone = true;
    this.#readFailure = undefined;
    try {
      const key = this.#keys.job(this.id);
      this.#key = key;
      this.#timeout = shared.getNow(now, this.#keys.typeTimeout);
      this.#value = now.readNow(key, true);
    } catch (error) {
      this.#readFailure = error;
    }
  }

  settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): void {
    if (this.#readDone) {
      // Read by `readFirst`: the whole add runs here, with no promise of its own.
      const value = this.#value;
      const timeout = this.#timeout;
      const failure = this.#readFailure;
      // Consumed: a retried attempt reads again (and the buffers are the transaction's now).
      this.#readDone = false;
      this.#value = undefined;
      this.#timeout = undefined;
      this.#readFailure = undefined;
      outcomes.settle(
        userVersion,
        failure === undefined ? this.#addRead(tx, this.#key as Buffer, timeout, value, shared) : { status: 'rejected', reason: failure as Error },
      );
      return;
    }
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
abstract class OwnJobCall<T> {
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

  /** This attempt's read of the record, made by `readFirst`: the job's data key, what it read, or why it failed. */
  #key: Buffer | undefined = undefined;
  #value: Buffer | undefined = undefined;
  #readFailure: unknown = undefined;
  #readDone = false;

  /** The call's work once the job's record is read: `key` is its data key, `value` what it read. Throws a halt. */
  protected abstract written(tx: Transaction, userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): T;

  /**
   * Where the transaction answers reads at once (the embedded engine), reads
   * the job's record now, before any call of the batch writes (see
   * `WriteRequest.readFirst`); elsewhere nothing, and `settleInto` reads
   * through `get`. Through a wrapper whose `get` is not the transaction's
   * own (a tracer, a test injecting read failures), `get` too, so that the
   * wrapper sees every read.
   */
  readFirst(tx: Transaction): void {
    const now = readsAtOnce(tx, 'get');
    if (now === undefined) return;
    this.#readDone = true;
    this.#readFailure = undefined;
    try {
      this.#key = this.keys.job(this.id);
      this.#value = now.readNow(this.#key, true);
    } catch (error) {
      this.#readFailure = error;
    }
  }

  /**
   * With the record read by `readFirst`, the whole call runs here: no
   * promise, callback or outcome wrapper of its own. Otherwise the read's
   * promise carries the rest.
   */
  settleInto(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes): void {
    let outcome: Settled<unknown>;
    try {
      if (!this.#readDone) {
        this.#settleLater(tx, userVersion, shared, outcomes, this.keys.job(this.id));
        return;
      }
      const value = this.#value;
      // Consumed: a retried attempt reads again (and the buffer is the transaction's now).
      this.#readDone = false;
      this.#value = undefined;
      if (this.#readFailure !== undefined) throw this.#readFailure;
      outcome = { status: 'fulfilled', value: this.written(tx, userVersion, shared, this.#key as Buffer, value) };
    } catch (error) {
      outcome = { status: 'rejected', reason: error as Error };
    }
    outcomes.settle(userVersion, outcome);
  }

  #settleLater(tx: Transaction, userVersion: number, shared: SharedReads, outcomes: BodyOutcomes, key: Buffer): void {
    // Callbacks passed inline (not named, so tsx adds no name wrapper).
    tx.get(key).then(
      (value) => outcomes.settle(userVersion, this.#settled(tx, userVersion, shared, key, value)),
      (error: unknown) => outcomes.settle(userVersion, { status: 'rejected', reason: error as Error }),
    );
  }

  #settled(tx: Transaction, userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): Settled<unknown> {
    try {
      return { status: 'fulfilled', value: this.written(tx, userVersion, shared, key, value) };
    } catch (error) {
      return { status: 'rejected', reason: error as Error };
    }
  }
}

/** A worker's `update` (or an item of `updateMany`) with its data encoded. */
export class UpdateCall extends OwnJobCall<Job> implements SettlingRequest<Job> {
  protected written(tx: Transaction, userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): Job {
    return updateJobRead(tx, this.keys, this.job, this.data, userVersion, key, value, shared);
  }
}

/** A worker's `finish` (or an item of `finishMany`) with its data encoded. */
export class FinishCall extends OwnJobCall<'pending' | 'finished'> implements SettlingRequest<'pending' | 'finished'> {
  protected written(tx: Transaction, _userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): 'pending' | 'finished' {
    return finishJobRead(tx, this.keys, this.job, this.data, key, value, shared);
  }
}

/** A worker's `complete` or `fail` (or an item of `completeMany`/`failMany`), its result or error encoded. */
export class EndCall extends OwnJobCall<'pending' | 'finished'> implements SettlingRequest<'pending' | 'finished'> {
  readonly #outcome: RunOutcome;

  constructor(keys: TypeKeys, job: Job, outcome: RunOutcome, row: Buffer | undefined) {
    super(keys, job, row);
    this.#outcome = outcome;
  }

  protected written(tx: Transaction, _userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): 'pending' | 'finished' {
    return endJobRead(tx, this.keys, this.job, this.#outcome, this.data, key, value, shared);
  }
}

/** A worker's `failAttempt`, its options checked. */
export class FailAttemptCall extends OwnJobCall<'pending'> implements SettlingRequest<'pending'> {
  readonly #scheduledTime: number;
  readonly #attempts: number | undefined;

  constructor(keys: TypeKeys, job: Job, scheduledTime: number, attempts: number | undefined) {
    super(keys, job, undefined);
    this.#scheduledTime = scheduledTime;
    this.#attempts = attempts;
  }

  protected written(tx: Transaction, _userVersion: number, shared: SharedReads, key: Buffer, value: Buffer | undefined): 'pending' {
    return failAttemptRead(tx, this.keys, this.job, this.#scheduledTime, this.#attempts, key, value, shared);
  }
}

/** What an add with no data and no options changes (see jobChanges). */
const NO_CHANGES: Changes = Object.freeze({
  data: undefined,
  priority: undefined,
  scheduledTime: undefined,
  continuous: undefined,
  retry: undefined,
  traceContext: undefined,
  group: undefined,
});

/** What an add or a creator's resubmit asks to change, checked and encoded; `options` are checked for their names already. */
export function jobChanges(data: unknown, options: AddOptions): Changes {
  // The common add (no data, no options) shares one object: bodies only read it.
  if (
    data === undefined &&
    options.priority === undefined &&
    options.scheduledTime === undefined &&
    options.continuous === undefined &&
    options.retry === undefined &&
    options.traceContext === undefined &&
    options.group === undefined
  ) {
    return NO_CHANGES;
  }
  return {
    data: data === undefined ? undefined : encodeJobData(data),
    priority: checkPriority(options.priority),
    scheduledTime: checkJobScheduledTime(options.scheduledTime),
    continuous: checkBooleanOption(options.continuous, 'continuous'),
    retry: encodeRetryPolicy(options.retry),
    traceContext: encodeTraceContext(options.traceContext),
    group: checkGroup(options.group),
  };
}

/** An `add` (or a job of `addMany`) of `id`; `keys` are its type's, `options` checked for their names already. */
export function addRequest(keys: TypeKeys, id: string, data: unknown, options: AddOptions): WriteRequest<JobState> {
  checkId(id);
  return new AddCall(keys, id, jobChanges(data, options), Date.now() / 1000);
}

/** An `update` (or an item of `updateMany`); `keys` are the job's type's, its handle checked. */
export function updateRequest(keys: TypeKeys, job: Job, data: unknown): WriteRequest<Job> {
  return new UpdateCall(keys, job, data === undefined ? undefined : encodeJobData(data));
}

/** A `finish` (or an item of `finishMany`); `keys` are the job's type's, its handle checked. */
export function finishRequest(keys: TypeKeys, job: Job, data: unknown): WriteRequest<'pending' | 'finished'> {
  return new FinishCall(keys, job, data === undefined ? undefined : encodeJobData(data));
}

/** A `complete` (or an item of `completeMany`); `keys` are the job's type's, its handle checked. */
export function completeRequest(keys: TypeKeys, job: Job, result: unknown): WriteRequest<'pending' | 'finished'> {
  return new EndCall(keys, job, 'succeeded', result === undefined ? undefined : encodeJobData(result));
}

/** A `fail` (or an item of `failMany`); `keys` are the job's type's, its handle checked. */
export function failRequest(keys: TypeKeys, job: Job, error: JobErrorInput): WriteRequest<'pending' | 'finished'> {
  return new EndCall(keys, job, 'failed', encodeJobError(error));
}

/** A `failAttempt`; `keys` are the job's type's, its handle checked, `options` checked for their names. */
export function failAttemptRequest(keys: TypeKeys, job: Job, options: FailAttemptOptions): WriteRequest<'pending'> {
  const { scheduledTime, attempts } = checkFailAttemptValues(options);
  return new FailAttemptCall(keys, job, scheduledTime, attempts);
}

/** `failAttempt`'s options, checked for their names already: the next run's time in epoch seconds, and the attempts if given. */
export function checkFailAttemptValues(options: FailAttemptOptions): { scheduledTime: number; attempts: number | undefined } {
  const scheduledTime = checkJobScheduledTime(options.scheduledTime);
  if (scheduledTime === undefined) throw new JobsError('invalid_option', "failAttempt needs the scheduledTime of the job's next run");
  const { attempts } = options;
  if (attempts !== undefined && !(Number.isSafeInteger(attempts) && attempts >= 0 && attempts <= MAX_ATTEMPTS)) {
    throw new JobsError('invalid_option', `failAttempt's attempts is an integer from 0 to ${MAX_ATTEMPTS}, got ${describe(attempts)}`);
  }
  return { scheduledTime, attempts };
}
