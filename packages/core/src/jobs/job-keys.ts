// The jobs keyspace (after couch_jobs_fdb; see docs/architecture.md), with every
// per-type prefix encoded once and cached:
//
//   (data, type, id)                    -> job record (job-record.ts)
//   (pending, type, -prio, stime, id)   -> ''   priority negated: the best job is the first key
//   (watches_pending, type)             -> counter bumped on every enqueue
//   (watches_activity, type)            -> versionstamp re-stamped on every state change
//   (watches_cancellations, type)       -> counter bumped for each running job removed or cancelled
//   (activity_timeout, type)            -> seconds (float64)
//   (activity, type, versionstamp)      -> id   one row per running job
//   (outcomes, outcome, type, id)       -> JSON what a finished job's run left apart from its
//                                               data: its result (succeeded), its error (failed),
//                                               null (cancelled); see outcome-rows.ts
//   (finished_log, type, outcome, time, seq) -> ids  jobs that finished so at that time (epoch seconds),
//                                               a row per write batch: the log retention prunes by,
//                                               oldest first; see finish-log.ts
//   (finished_count, outcome, type)     -> int64 LE how many of the type's jobs are finished so (an atomic counter)
//   (finished_scan, type)               -> how far the logging of jobs finished before the log
//                                               existed has got; see finish-log.ts
//   (retry_policies, type, id)          -> JSON a job's own retry policy, given to add; see job-retry-policy.ts
//   (trace_contexts, type, id)          -> JSON the trace context an add carried; see job-trace-context.ts
//   (type_limits, type)                 -> JSON the type's limits; see type-limits.ts
//   (type_running, type)                -> counter of the type's running jobs (every take adds, every end subtracts)
//   (type_rate_windows, type)           -> the start of the type's current rate window and the starts in it
//   (paused, type)                      -> float64 when the type was paused (ms); see type-pauses.ts
//   (schedules, name)                   -> JSON a recurring job's schedule; see schedules.ts
//   (flows, …), (flow_children, …), (flow_parents, …)  job flows' links; see flow-rows.ts
//   (groups, …)                         -> a type's groups, their queues, turns and counters; see group-keys.ts

import { pack } from 'fdb-tuple';
import { JobsError } from '../errors.js';
import { hasPrefix } from '../keys/has-prefix.js';
import { Subspace } from '../keys/subspace.js';
import {
  appendTupleString,
  copyPrefix,
  isShortAscii,
  TUPLE_DOUBLE_BYTES,
  TUPLE_STRING_CODE,
  writeAscii,
  writeTupleDouble,
} from '../keys/tuple-append.js';
import { TypeGroupKeys } from './group-keys.js';
import { RECORD_SEQ_OFFSET } from './job-record.js';
import type { JobOutcome } from './job-record.js';
import { completeVersionstampElement, TUPLE_VERSIONSTAMP_LENGTH, versionstampElement } from '../keys/versionstamp.js';

/** Types whose prefixes stay cached; past this the cache starts over. */
const MAX_CACHED_TYPES = 10_000;
/** Priorities whose encoded pending prefix a type keeps; past this the cache starts over. */
const MAX_CACHED_PRIORITIES = 64;
/** Id elements up to this many bytes are copied by a loop in JavaScript (see jobFromElement). */
const COPY_LOOP_BYTES = 64;
/** User versions whose activity template a type keeps (a batch holds at most 1,000 jobs). */
const MAX_CACHED_TEMPLATES = 1_024;

/** The keys of one job type. */
export class TypeKeys {
  readonly type: string;
  readonly data: Subspace;
  readonly pending: Subspace;
  readonly activity: Subspace;
  readonly watchesPending: Buffer;
  readonly watchesActivity: Buffer;
  readonly watchesCancellations: Buffer;
  readonly typeTimeout: Buffer;
  /** (type_limits, type), (type_running, type), (type_rate_windows, type): see type-limits.ts. */
  readonly limits: Buffer;
  readonly runningCount: Buffer;
  readonly rateWindow: Buffer;
  /** (paused, type): present while the type is paused (no take starts a run). */
  readonly paused: Buffer;
  /** (outcomes, outcome, type) for each outcome: the rows of this type's finished jobs that ended so. */
  readonly outcomes: Readonly<Record<JobOutcome, Subspace>>;
  /** (finished_log, type, outcome) for each outcome: this type's finish log (finish-log.ts). */
  readonly finishLog: Readonly<Record<JobOutcome, Subspace>>;
  /** (finished_count, outcome, type) for each outcome: how many of this type's jobs are finished so. */
  readonly finishedCount: Readonly<Record<JobOutcome, Buffer>>;
  /** (finished_scan, type): see finish-log.ts. */
  readonly finishedScan: Buffer;
  /** (retry_policies, type): the rows of this type's jobs that have their own retry policy. */
  readonly retryPolicies: Subspace;
  /** (trace_contexts, type): the rows of this type's jobs that carry a trace context. */
  readonly traceContexts: Subspace;
  /** (activity, type, <unset versionstamp, user version 0>) and where its 10 commit bytes go. */
  readonly activityTemplate: { key: Buffer; offset: number };
  readonly #groupsRoot: Subspace;
  #groups: TypeGroupKeys | undefined;
  /** `pendingPriorityPrefix` by priority: a queue rarely uses more than a few. */
  readonly #priorityPrefixes = new Map<number, Buffer>();
  /** `activityTemplateFor` by user version: every batch uses the same first ones. */
  readonly #activityTemplates: { key: Buffer; offset: number }[] = [];

  constructor(root: JobKeys, type: string) {
    this.type = type;
    this.data = root.data.subspace(type);
    this.pending = root.pending.subspace(type);
    this.activity = root.activity.subspace(type);
    this.watchesPending = root.watchesPending.pack(type);
    this.watchesActivity = root.watchesActivity.pack(type);
    this.watchesCancellations = root.watchesCancellations.pack(type);
    this.typeTimeout = root.typeTimeouts.pack(type);
    this.limits = root.typeLimits.pack(type);
    this.runningCount = root.typeRunning.pack(type);
    this.rateWindow = root.typeRateWindows.pack(type);
    this.paused = root.paused.pack(type);
    this.#groupsRoot = root.groups;
    this.outcomes = {
      succeeded: root.outcomes.subspace('succeeded', type),
      failed: root.outcomes.subspace('failed', type),
      cancelled: root.outcomes.subspace('cancelled', type),
    };
    this.finishLog = {
      succeeded: root.finishLog.subspace(type, 'succeeded'),
      failed: root.finishLog.subspace(type, 'failed'),
      cancelled: root.finishLog.subspace(type, 'cancelled'),
    };
    this.finishedCount = {
      succeeded: root.finishedCount.pack(['succeeded', type]),
      failed: root.finishedCount.pack(['failed', type]),
      cancelled: root.finishedCount.pack(['cancelled', type]),
    };
    this.finishedScan = root.finishedScan.pack(type);
    this.retryPolicies = root.retryPolicies.subspace(type);
    this.traceContexts = root.traceContexts.subspace(type);
    const element = versionstampElement(0);
    this.activityTemplate = {
      key: this.activity.append(element.bytes),
      offset: this.activity.prefix.length + element.offset,
    };
  }

  job(id: string): Buffer {
    return appendTupleString(this.data.prefix, id);
  }

  /** The keys of this type's groups (see job-groups.ts), made when first asked for. */
  get groups(): TypeGroupKeys {
    this.#groups ??= new TypeGroupKeys(this.#groupsRoot, this.type);
    return this.#groups;
  }

  /** The retry policy row of the job `id`. */
  retryPolicyKey(id: string): Buffer {
    return appendTupleString(this.retryPolicies.prefix, id);
  }

  /** The trace context row of the job `id`. */
  traceContextKey(id: string): Buffer {
    return appendTupleString(this.traceContexts.prefix, id);
  }

  /** The outcome row of the job `id`, which ended as `outcome`. */
  outcomeKey(outcome: JobOutcome, id: string): Buffer {
    return appendTupleString(this.outcomes[outcome].prefix, id);
  }

  /**
   * The data key of the job whose id is the last element of `key`, from
   * `at` on (a pending key's id, say): the data prefix and that element's
   * bytes as they are, since a string element is encoded alike in any
   * tuple. No decode and encode of the id again, as `job(id)` would need.
   */
  jobFromElement(key: Buffer, at: number): Buffer {
    const prefix = this.data.prefix;
    const element = key.length - at;
    const start = prefix.length;
    const out = Buffer.allocUnsafe(start + element);
    copyPrefix(out, prefix);
    // A loop beats a call into C++ for the few dozen bytes of a usual id.
    if (element > COPY_LOOP_BYTES) key.copy(out, start, at);
    else for (let i = 0; i < element; i++) out[start + i] = key[at + i] as number;
    return out;
  }

  /** The pending key: lower keys run first, so the priority is negated. */
  pendingKey(priority: number, scheduledTime: number, id: string): Buffer {
    const ascii = isShortAscii(id);
    // A NUL in the id needs escaping: rare, so left to the general path.
    if (!ascii && id.includes('\u0000')) return appendTupleString(this.pendingRankPrefix(priority, scheduledTime), id);
    // One allocation for the whole key: it is built on every enqueue and dequeue.
    const prefix = this.pendingPriorityPrefix(priority);
    const length = ascii ? id.length : Buffer.byteLength(id, 'utf8');
    const at = prefix.length + TUPLE_DOUBLE_BYTES;
    const key = Buffer.allocUnsafe(at + length + 2);
    copyPrefix(key, prefix);
    writeTupleDouble(key, prefix.length, scheduledTime);
    key[at] = TUPLE_STRING_CODE;
    if (ascii) writeAscii(key, at + 1, id);
    else key.write(id, at + 1, length, 'utf8');
    key[key.length - 1] = 0x00;
    return key;
  }

  /** All pending keys of one priority. */
  pendingPriorityPrefix(priority: number): Buffer {
    let prefix = this.#priorityPrefixes.get(priority);
    if (prefix === undefined) {
      if (this.#priorityPrefixes.size >= MAX_CACHED_PRIORITIES) this.#priorityPrefixes.clear();
      prefix = this.pending.append(pack([pendingPriority(priority)]));
      this.#priorityPrefixes.set(priority, prefix);
    }
    return prefix;
  }

  /** All pending keys of one priority and scheduled time: jobs of equal rank. */
  pendingRankPrefix(priority: number, scheduledTime: number): Buffer {
    const prefix = this.pendingPriorityPrefix(priority);
    const rank = Buffer.allocUnsafe(prefix.length + TUPLE_DOUBLE_BYTES);
    rank.set(prefix, 0);
    writeTupleDouble(rank, prefix.length, scheduledTime);
    return rank;
  }

  /**
   * The activity key template with user version `userVersion`: rows written
   * by one transaction share the commit stamp, so each needs its own.
   */
  activityTemplateFor(userVersion: number): { key: Buffer; offset: number } {
    if (userVersion === 0) return this.activityTemplate;
    // Cached: the storage copies what it is given, so a shared template is never changed.
    const cached = this.#activityTemplates[userVersion];
    if (cached !== undefined) return cached;
    const key = Buffer.from(this.activityTemplate.key);
    key.writeUInt16BE(userVersion, this.activityTemplate.offset + 10);
    const template = { key, offset: this.activityTemplate.offset };
    if (userVersion < MAX_CACHED_TEMPLATES) this.#activityTemplates[userVersion] = template;
    return template;
  }

  /**
   * The first activity key of commit `stamp` (its first 10 bytes; the user
   * version is ignored): rows of one commit are all as old as each other.
   */
  activityCommitStart(stamp: Uint8Array): Buffer {
    const bytes = Buffer.alloc(12);
    bytes.set(stamp.subarray(0, 10));
    return this.activityKey(bytes);
  }

  /** The first activity key after every row of commit `stamp`. */
  activityCommitEnd(stamp: Uint8Array): Buffer {
    const bytes = Buffer.alloc(12, 0xff);
    bytes.set(stamp.subarray(0, 10));
    return Buffer.concat([this.activityKey(bytes), Buffer.of(0)]);
  }

  /**
   * The activity row of the running job whose encoded record is `record`
   * (its sequence copied straight from the record: no view of it first).
   */
  activityKeyOfRecord(record: Buffer): Buffer {
    const { key: template, offset } = this.activityTemplate;
    const length = template.length;
    const key = Buffer.allocUnsafe(length);
    // Each byte written once: the template's around the stamp, the record's
    // sequence in it (copying the whole template first, then the stamp over
    // it, took half as long again; every finish and update builds one).
    for (let i = 0; i < offset; i++) key[i] = template[i] as number;
    for (let i = 0; i < TUPLE_VERSIONSTAMP_LENGTH; i++) key[offset + i] = record[RECORD_SEQ_OFFSET + i] as number;
    for (let i = offset + TUPLE_VERSIONSTAMP_LENGTH; i < length; i++) key[i] = template[i] as number;
    return key;
  }

  /** The activity row of a running job whose sequence is `seq` (12 bytes). */
  activityKey(seq: Uint8Array): Buffer {
    if (seq.length !== TUPLE_VERSIONSTAMP_LENGTH) return this.activity.append(completeVersionstampElement(seq)); // throws
    // The template's bytes with the stamp filled in: what the commit wrote.
    const { key: template, offset } = this.activityTemplate;
    const key = Buffer.allocUnsafe(template.length);
    key.set(template, 0);
    key.set(seq, offset);
    return key;
  }
}

/** Tuple-encodes the priority so that higher priorities sort first; 0 stays +0. */
function pendingPriority(priority: number): number {
  return priority === 0 ? 0 : -priority;
}

/** A pending key's parts. */
export interface PendingKeyParts {
  priority: number;
  scheduledTime: number;
  id: string;
}

/** Decodes a pending key's (priority, scheduled time, id). */
export function parsePendingKey(keys: TypeKeys, key: Uint8Array): PendingKeyParts {
  return parsePendingKeyFast(keys.pending.prefix, key) ?? parsePendingKeyTuple(keys, key);
}

/** Tuple typecodes a pending key is made of. */
const INT_ZERO_CODE = 0x14;
/** Integers of up to 6 bytes decode exactly with float arithmetic; longer ones take the general path. */
const MAX_FAST_INT_BYTES = 6;
const DOUBLE_CODE = 0x21;
const STRING_CODE = 0x02;

/**
 * The common pending key decoded by hand: an integer priority of up to 6
 * bytes, a double scheduled time and an id without NUL bytes, read straight
 * from the key (every dequeue decodes a page of keys; the general tuple
 * decoder allocated an array and a buffer per element). `undefined` for
 * anything else, which the general decoder then reads or rejects.
 */
export function parsePendingKeyFast(prefix: Buffer, bytes: Uint8Array): PendingKeyParts | undefined {
  if (!Buffer.isBuffer(bytes)) return undefined;
  const key = bytes;
  let at = prefix.length;
  if (key.length < at + 1 + 1 + 9 + 2 || !hasPrefix(key, prefix)) return undefined;
  // The priority is stored negated: higher priorities sort first.
  const code = key[at] as number;
  let negated: number;
  if (code === INT_ZERO_CODE) {
    negated = 0;
    at += 1;
  } else if (code > INT_ZERO_CODE && code - INT_ZERO_CODE <= MAX_FAST_INT_BYTES) {
    const length = code - INT_ZERO_CODE;
    negated = key.readUIntBE(at + 1, length);
    at += 1 + length;
  } else if (code < INT_ZERO_CODE && INT_ZERO_CODE - code <= MAX_FAST_INT_BYTES) {
    // A negative integer is the ones' complement of its magnitude.
    const length = INT_ZERO_CODE - code;
    negated = key.readUIntBE(at + 1, length) - (2 ** (8 * length) - 1);
    at += 1 + length;
  } else {
    return undefined;
  }
  if (key[at] !== DOUBLE_CODE || key.length < at + 9 + 2) return undefined;
  const scheduledTime = readTupleDouble(key, at + 1);
  at += 9;
  if (key[at] !== STRING_CODE) return undefined;
  // The id runs to the key's last byte, a 00; a 00 earlier is an escaped NUL (00 ff).
  const end = key.indexOf(0, at + 1);
  if (end !== key.length - 1) return undefined;
  return { priority: negated === 0 ? 0 : -negated, scheduledTime, id: key.toString('utf8', at + 1, end) };
}

/**
 * The double element at `at` of a key (a pending key's scheduled time, say),
 * or `undefined` when no double element starts there.
 */
export function readTupleDoubleElement(key: Buffer, at: number): number | undefined {
  if (at < 0 || key[at] !== DOUBLE_CODE || key.length < at + TUPLE_DOUBLE_BYTES) return undefined;
  return readTupleDouble(key, at + 1);
}

/** Reads the 8 bytes of a tuple double (see writeTupleDouble): the sign bit was flipped, or every bit. */
function readTupleDouble(key: Buffer, at: number): number {
  const first = key[at] as number;
  if ((first & 0x80) !== 0) {
    DOUBLE_SCRATCH[0] = first ^ 0x80;
    for (let i = 1; i < 8; i++) DOUBLE_SCRATCH[i] = key[at + i] as number;
  } else {
    for (let i = 0; i < 8; i++) DOUBLE_SCRATCH[i] = ~(key[at + i] as number) & 0xff;
  }
  return DOUBLE_SCRATCH.readDoubleBE(0);
}

const DOUBLE_SCRATCH = Buffer.alloc(8);

function parsePendingKeyTuple(keys: TypeKeys, key: Uint8Array): PendingKeyParts {
  const [negated, scheduledTime, id] = keys.pending.unpack(key);
  if (typeof negated !== 'number' || typeof scheduledTime !== 'number' || typeof id !== 'string') {
    throw new JobsError('corrupt_record', `a pending key does not decode to (priority, scheduled time, id): ${Buffer.from(key).toString('hex')}`);
  }
  return { priority: negated === 0 ? 0 : -negated, scheduledTime, id };
}

/** The root of the jobs keyspace and a cache of per-type keys. */
export class JobKeys {
  readonly data: Subspace;
  readonly pending: Subspace;
  readonly watchesPending: Subspace;
  readonly watchesActivity: Subspace;
  readonly watchesCancellations: Subspace;
  readonly typeTimeouts: Subspace;
  readonly typeLimits: Subspace;
  readonly typeRunning: Subspace;
  readonly typeRateWindows: Subspace;
  /** (paused, type): see the top of this file. */
  readonly paused: Subspace;
  /** (schedules, name): see the top of this file. */
  readonly schedules: Subspace;
  /** (groups, …): see group-keys.ts. */
  readonly groups: Subspace;
  readonly activity: Subspace;
  /** (outcomes, outcome, type, id): see the top of this file. */
  readonly outcomes: Subspace;
  /** (finished_log, type, outcome, time, seq), (finished_count, outcome, type), (finished_scan, type): see the top of this file. */
  readonly finishLog: Subspace;
  readonly finishedCount: Subspace;
  readonly finishedScan: Subspace;
  /** (retry_policies, type, id): see the top of this file. */
  readonly retryPolicies: Subspace;
  /** (trace_contexts, type, id): see the top of this file. */
  readonly traceContexts: Subspace;
  readonly #types = new Map<string, TypeKeys>();

  constructor(root: Subspace = Subspace.of('jobs')) {
    this.data = root.subspace('data');
    this.pending = root.subspace('pending');
    this.watchesPending = root.subspace('watches_pending');
    this.watchesActivity = root.subspace('watches_activity');
    this.watchesCancellations = root.subspace('watches_cancellations');
    this.typeTimeouts = root.subspace('activity_timeout');
    this.typeLimits = root.subspace('type_limits');
    this.typeRunning = root.subspace('type_running');
    this.typeRateWindows = root.subspace('type_rate_windows');
    this.paused = root.subspace('paused');
    this.schedules = root.subspace('schedules');
    this.groups = root.subspace('groups');
    this.activity = root.subspace('activity');
    this.outcomes = root.subspace('outcomes');
    this.finishLog = root.subspace('finished_log');
    this.finishedCount = root.subspace('finished_count');
    this.finishedScan = root.subspace('finished_scan');
    this.retryPolicies = root.subspace('retry_policies');
    this.traceContexts = root.subspace('trace_contexts');
  }

  /** The cached keys of `type`, if any (a cached type has passed the input checks). */
  cached(type: unknown): TypeKeys | undefined {
    return typeof type === 'string' ? this.#types.get(type) : undefined;
  }

  forType(type: string): TypeKeys {
    let keys = this.#types.get(type);
    if (keys === undefined) {
      if (this.#types.size >= MAX_CACHED_TYPES) this.#types.clear();
      keys = new TypeKeys(this, type);
      this.#types.set(type, keys);
    }
    return keys;
  }
}
