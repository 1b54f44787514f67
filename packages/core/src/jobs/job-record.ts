// The value of a job's data row, (data, type, id) -> (format and state,
// seq, lock, flags, prio, stime, attempts, data). It is a fixed binary
// header followed by the JSON data rather than a packed tuple: reading a
// job's state, lock or schedule needs no tuple decode and no JSON parse, and
// the running sequence sits at a fixed offset where
// `setVersionstampedValue` fills it in at commit.
//
// The stored form is versioned by the high nibble of the first byte. Format
// 0 (first byte 1..3, a 46-byte header with no attempts) is what stores
// written before outcomes hold; it still reads (attempts 0, and a finished
// job's outcome bits are 0: succeeded) and is rewritten in place by accept,
// update and finish, which change only bytes both formats share. Every
// record encoded whole is written in the current format. A format this code
// does not know reads as `corrupt_record`, never as something else.

import { randomFillSync } from 'node:crypto';
import { JobsError } from '../errors.js';
import { TUPLE_VERSIONSTAMP_LENGTH } from '../keys/versionstamp.js';

/**
 * `waiting`: a flow's parent whose children have not all ended yet; not
 * taken until they have (see job-flows.ts), then `pending`.
 */
export type JobState = 'waiting' | 'pending' | 'running' | 'finished';

/**
 * How a finished job ended: `succeeded` (its worker finished it), `failed`
 * (its worker gave it up) or `cancelled` (`cancel` ended it).
 */
export type JobOutcome = 'succeeded' | 'failed' | 'cancelled';

const STATE_BYTES: Record<JobState, number> = { pending: 1, running: 2, finished: 3, waiting: 4 };
const STATES: Record<number, JobState> = { 1: 'pending', 2: 'running', 3: 'finished', 4: 'waiting' };
const STATE_MASK = 0x0f;
const FORMAT_SHIFT = 4;
/** The format every record encoded whole is written in (see the top of this file). */
const CURRENT_FORMAT = 1;
const CURRENT_FORMAT_BITS = CURRENT_FORMAT << FORMAT_SHIFT;

const SEQ_OFFSET = 1;
const LOCK_OFFSET = SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH; // 13
const LOCK_BYTES = 16;
/**
 * A finished record has no sequence and no lock: where its lock was, it
 * holds the time it finished (epoch seconds, float64), the time of its entry
 * in the finish log (finish-log.ts), so that a prune tells a job still
 * finished so from one whose entry went stale. 0 in records finished before
 * the log existed (these bytes were zeroed): such a job has no entry yet.
 */
const FINISHED_AT_OFFSET = LOCK_OFFSET;
/**
 * One byte of flags: bit 0 resubmit, bit 1 continuous, bits 2-3 a finished
 * job's outcome (0 succeeded, 1 failed, 2 cancelled), bit 4 the job has a
 * row in the outcomes subspace (a result, an error, a cancellation), bit 5
 * the job has its own retry policy (a row in the retry policies subspace),
 * bit 6 the job carries a trace context (a row in the trace contexts
 * subspace), bit 7 the record has an extension (below). Records written before the continuous flag existed hold 0 or 1
 * here, so they read back as one-shot jobs; records written before
 * outcomes, as succeeded; before retry policies or trace contexts, as jobs
 * without one.
 */
const FLAGS_OFFSET = LOCK_OFFSET + LOCK_BYTES; // 29
const RESUBMIT_FLAG = 1;
const CONTINUOUS_FLAG = 2;
const OUTCOME_SHIFT = 2;
const OUTCOME_MASK = 3 << OUTCOME_SHIFT;
const OUTCOME_ROW_FLAG = 16;
const RETRY_POLICY_FLAG = 32;
const TRACE_CONTEXT_FLAG = 64;
const EXTENDED_FLAG = 128;
/** The flags that stay with a job through its runs (accept and finish keep them). */
const KEPT_FLAGS = CONTINUOUS_FLAG | RETRY_POLICY_FLAG | TRACE_CONTEXT_FLAG | EXTENDED_FLAG;
const OUTCOME_BITS: Record<JobOutcome, number> = { succeeded: 0, failed: 1, cancelled: 2 };
const OUTCOMES: Record<number, JobOutcome> = { 0: 'succeeded', 1: 'failed', 2: 'cancelled' };
const PRIORITY_OFFSET = FLAGS_OFFSET + 1; // 30
const TIME_OFFSET = PRIORITY_OFFSET + 8; // 38
/** Format 0 ends its header here: its data starts at this offset. */
const LEGACY_HEADER_BYTES = TIME_OFFSET + 8; // 46
/** Failed attempts so far, uint32 (format 1 on). */
const ATTEMPTS_OFFSET = LEGACY_HEADER_BYTES; // 46
/** Bytes before the JSON data in the current format. */
export const RECORD_HEADER_BYTES = ATTEMPTS_OFFSET + 4; // 50
/**
 * The extension: a record whose flags have bit 7 holds, right after the
 * header and before the data, one byte of more flags, bit 0 the job belongs
 * to a flow (a parent or a child: its rows in the flow subspaces,
 * flow-rows.ts, are read when it ends), bit 1 the job belongs to a group
 * (see job-groups.ts), and then, for a group, a uint16 length and that many
 * UTF-8 bytes: every path that reads the record knows its group and whether
 * it is in a flow without a read. Jobs with neither have no extension.
 * Other bits are a newer version's: such a record reads as corrupt here.
 */
const EXTENSION_OFFSET = RECORD_HEADER_BYTES;
const IN_FLOW_EXTENSION = 1;
const GROUP_EXTENSION = 2;
const KNOWN_EXTENSIONS = IN_FLOW_EXTENSION | GROUP_EXTENSION;
const GROUP_LENGTH_OFFSET = EXTENSION_OFFSET + 1;
const GROUP_OFFSET = GROUP_LENGTH_OFFSET + 2;
/** The most failed attempts a record holds. */
export const MAX_ATTEMPTS = 0xffff_ffff;

/** The offset `setVersionstampedValue` fills for a running record with a fresh sequence. */
export const RECORD_SEQ_OFFSET = SEQ_OFFSET;

export interface JobRecord {
  state: JobState;
  /**
   * Running jobs only: the 12-byte tuple versionstamp of the job's last
   * accept/update; it is also the key of its activity row.
   */
  seq: Buffer | undefined;
  /** Running jobs only: the owning worker's lock, 32 hex characters. */
  lock: string | undefined;
  /** Running jobs only: re-enqueue instead of finishing. */
  resubmit: boolean;
  /** The job runs until stopped (a scheduler may rotate it out), rather than to completion. */
  continuous: boolean;
  priority: number;
  /** Epoch seconds. */
  scheduledTime: number;
  /** Failed attempts so far (see `failAttempt`); 0 in records of format 0. */
  attempts: number;
  /** Finished jobs only: how the job ended. */
  outcome: JobOutcome | undefined;
  /** Finished jobs only: the job has a row in the outcomes subspace (its result, error or cancellation). */
  outcomeRow: boolean;
  /** Finished jobs only: when it finished (epoch seconds), the time of its finish log entry; `undefined` when it has no entry yet. */
  finishedAt: number | undefined;
  /** The job has its own retry policy, a row in the retry policies subspace. */
  retryPolicy: boolean;
  /** The job carries a trace context, a row in the trace contexts subspace. */
  traceContext: boolean;
  /** The job belongs to a flow (see job-flows.ts); left out when it does not. */
  inFlow?: boolean;
  /** The job's group (see job-groups.ts), kept in the record between its header and its data. */
  group?: string | undefined;
  /** The data as UTF-8 JSON, not parsed. */
  data: Buffer;
}

/** A record to encode: a new job's (or a record of format 0's) attempts, outcome and outcome row may be left out. */
export type JobRecordInput = Omit<JobRecord, 'attempts' | 'outcome' | 'outcomeRow' | 'finishedAt' | 'retryPolicy' | 'traceContext' | 'group'> &
  Partial<Pick<JobRecord, 'attempts' | 'outcome' | 'outcomeRow' | 'finishedAt' | 'retryPolicy' | 'traceContext' | 'group'>>;

/**
 * Random bytes for locks, filled 256 locks at a time and turned into hex in
 * one string: one `randomBytes` call per accepted job was a visible share of
 * an accept batch's time, and so was a hex conversion per lock.
 */
const LOCKS_PER_FILL = 256;
const lockPool = Buffer.alloc(LOCK_BYTES * LOCKS_PER_FILL);
let lockHex = '';
let lockAt = LOCKS_PER_FILL;

/** A fresh worker lock: 16 random bytes as hex. */
export function newLock(): string {
  if (lockAt === LOCKS_PER_FILL) fillLocks();
  // A substring of the fill's hex (V8 shares the characters rather than copying them).
  const lock = lockHex.slice(lockAt * LOCK_BYTES * 2, (lockAt + 1) * LOCK_BYTES * 2);
  lockAt += 1;
  return lock;
}

function fillLocks(): void {
  randomFillSync(lockPool);
  lockHex = lockPool.toString('hex');
  lockAt = 0;
}

/**
 * Encodes a record. With `freshSeq` the 10 commit bytes of the sequence are
 * left for the commit to fill (write the result with
 * `setVersionstampedValue(key, value, RECORD_SEQ_OFFSET)`) and the 2 user
 * bytes are `userVersion`; otherwise `record.seq` is written as it is.
 */
export function encodeJobRecord(record: JobRecordInput, freshSeq = false, userVersion = 0): Buffer {
  // From Node's pool (Buffer.alloc made an ArrayBuffer per record); every
  // byte is written below: the sequence and lock zeroed, then set if running.
  const group = record.group === undefined ? undefined : Buffer.from(record.group, 'utf8');
  const extension = (record.inFlow === true ? IN_FLOW_EXTENSION : 0) | (group === undefined ? 0 : GROUP_EXTENSION);
  const header = extension === 0 ? RECORD_HEADER_BYTES : group === undefined ? GROUP_LENGTH_OFFSET : GROUP_OFFSET + group.length;
  const value = Buffer.allocUnsafe(header + record.data.length);
  value[0] = CURRENT_FORMAT_BITS | STATE_BYTES[record.state];
  value.fill(0, SEQ_OFFSET, FLAGS_OFFSET);
  if (record.state === 'running') {
    if (freshSeq) {
      value.writeUInt16BE(userVersion, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
    } else {
      if (record.seq?.length !== TUPLE_VERSIONSTAMP_LENGTH) throw new JobsError('corrupt_record', 'a running job record needs its sequence');
      record.seq.copy(value, SEQ_OFFSET);
    }
    if (record.lock === undefined) throw new JobsError('corrupt_record', 'a running job record needs its lock');
    value.write(record.lock, LOCK_OFFSET, LOCK_BYTES, 'hex');
  }
  let flags =
    (record.resubmit ? RESUBMIT_FLAG : 0) |
    (record.continuous ? CONTINUOUS_FLAG : 0) |
    (record.retryPolicy ? RETRY_POLICY_FLAG : 0) |
    (record.traceContext ? TRACE_CONTEXT_FLAG : 0) |
    (extension === 0 ? 0 : EXTENDED_FLAG);
  if (record.state === 'finished') {
    flags |= outcomeFlags(record.outcome ?? 'succeeded', record.outcomeRow === true);
    if (record.finishedAt !== undefined) value.writeDoubleBE(record.finishedAt, FINISHED_AT_OFFSET);
  }
  value[FLAGS_OFFSET] = flags;
  value.writeDoubleBE(record.priority, PRIORITY_OFFSET);
  value.writeDoubleBE(record.scheduledTime, TIME_OFFSET);
  value.writeUInt32BE(Math.min(record.attempts ?? 0, MAX_ATTEMPTS), ATTEMPTS_OFFSET);
  if (extension !== 0) value[EXTENSION_OFFSET] = extension;
  if (group !== undefined) {
    value.writeUInt16BE(group.length, GROUP_LENGTH_OFFSET);
    group.copy(value, GROUP_OFFSET);
  }
  record.data.copy(value, header);
  return value;
}

/** The flag bits of a finished record's outcome. */
function outcomeFlags(outcome: JobOutcome, outcomeRow: boolean): number {
  return (OUTCOME_BITS[outcome] << OUTCOME_SHIFT) | (outcomeRow ? OUTCOME_ROW_FLAG : 0);
}

/**
 * Where the JSON data of an encoded record starts (its header's length,
 * by its format); `undefined` for a format this code does not know.
 */
function headerBytes(value: Buffer): number | undefined {
  const format = (value[0] ?? 0) >> FORMAT_SHIFT;
  if (format !== CURRENT_FORMAT) return format === 0 ? LEGACY_HEADER_BYTES : undefined;
  if (((value[FLAGS_OFFSET] ?? 0) & EXTENDED_FLAG) === 0) return RECORD_HEADER_BYTES;
  // A header longer than the record (its extension, or a group's length, past its end) makes it corrupt.
  if (value.length <= EXTENSION_OFFSET) return GROUP_LENGTH_OFFSET;
  const extension = value[EXTENSION_OFFSET] as number;
  if ((extension & ~KNOWN_EXTENSIONS) !== 0) return undefined;
  if ((extension & GROUP_EXTENSION) === 0) return GROUP_LENGTH_OFFSET;
  return value.length < GROUP_OFFSET ? GROUP_OFFSET : GROUP_OFFSET + value.readUInt16BE(GROUP_LENGTH_OFFSET);
}

/** The extension flags of an encoded record (0 when it has none). */
function extensionOf(value: Buffer): number {
  if (((value[FLAGS_OFFSET] ?? 0) & EXTENDED_FLAG) === 0 || !currentFormat(value)) return 0;
  return value[EXTENSION_OFFSET] ?? 0;
}

/** Whether an encoded record is of the current format (it counts attempts). */
function currentFormat(value: Buffer): boolean {
  return (value[0] ?? 0) >> FORMAT_SHIFT === CURRENT_FORMAT;
}

/** The group of an encoded record's job, `undefined` when it has none. */
export function recordGroup(value: Buffer): string | undefined {
  if ((extensionOf(value) & GROUP_EXTENSION) === 0) return undefined;
  return value.toString('utf8', GROUP_OFFSET, GROUP_OFFSET + value.readUInt16BE(GROUP_LENGTH_OFFSET));
}

/** Where the JSON data of an encoded record starts; `corrupt_record` when it does not decode. */
export function recordDataOffset(value: Buffer): number {
  const header = headerBytes(value);
  if (header === undefined || value.length < header) decodeJobRecord(value); // throws corrupt_record
  return header as number;
}

// --- reading and rewriting encoded records in place -----------------------
// accept and finish change only a few header bytes of a record: they work
// on its bytes rather than decode it to an object and encode it again
// (which copied the data twice and allocated the sequence and lock).

/** The state of an encoded record; `corrupt_record` when it does not decode. */
export function recordState(value: Buffer): JobState {
  const state = STATES[(value[0] ?? 0) & STATE_MASK];
  const header = headerBytes(value);
  if (state === undefined || header === undefined || value.length < header) decodeJobRecord(value); // throws corrupt_record
  return state as JobState;
}

export function recordPriority(value: Buffer): number {
  return value.readDoubleBE(PRIORITY_OFFSET);
}

export function recordScheduledTime(value: Buffer): number {
  return value.readDoubleBE(TIME_OFFSET);
}

export function recordContinuous(value: Buffer): boolean {
  return ((value[FLAGS_OFFSET] ?? 0) & CONTINUOUS_FLAG) !== 0;
}

/** Whether an encoded record's job has its own retry policy (a row in the retry policies subspace). */
export function recordRetryPolicy(value: Buffer): boolean {
  return ((value[FLAGS_OFFSET] ?? 0) & RETRY_POLICY_FLAG) !== 0;
}

/** Whether an encoded record's job belongs to a flow (see job-flows.ts). */
export function recordInFlow(value: Buffer): boolean {
  return (extensionOf(value) & IN_FLOW_EXTENSION) !== 0;
}

/** Whether an encoded record's job carries a trace context (a row in the trace contexts subspace). */
export function recordTraceContext(value: Buffer): boolean {
  return ((value[FLAGS_OFFSET] ?? 0) & TRACE_CONTEXT_FLAG) !== 0;
}

export function recordResubmit(value: Buffer): boolean {
  return ((value[FLAGS_OFFSET] ?? 0) & RESUBMIT_FLAG) !== 0;
}

/** Failed attempts of an encoded record (0 in format 0, which has none). */
export function recordAttempts(value: Buffer): number {
  return currentFormat(value) ? value.readUInt32BE(ATTEMPTS_OFFSET) : 0;
}

/**
 * The outcome of an encoded record: how it ended when it is finished,
 * `undefined` otherwise. Read from the header alone (no JSON), so a scan
 * filters on it cheaply.
 */
export function recordOutcome(value: Buffer): JobOutcome | undefined {
  if (((value[0] ?? 0) & STATE_MASK) !== STATE_BYTES.finished) return undefined;
  return OUTCOMES[((value[FLAGS_OFFSET] ?? 0) & OUTCOME_MASK) >> OUTCOME_SHIFT];
}

/** Whether an encoded finished record has a row in the outcomes subspace. */
export function recordHasOutcomeRow(value: Buffer): boolean {
  return ((value[0] ?? 0) & STATE_MASK) === STATE_BYTES.finished && ((value[FLAGS_OFFSET] ?? 0) & OUTCOME_ROW_FLAG) !== 0;
}

/** When an encoded finished record finished (its finish log entry's time), `undefined` when it has none or is not finished. */
export function recordFinishedAt(value: Buffer): number | undefined {
  if (((value[0] ?? 0) & STATE_MASK) !== STATE_BYTES.finished) return undefined;
  const at = value.readDoubleBE(FINISHED_AT_OFFSET);
  return at === 0 ? undefined : at;
}

/** The running sequence of an encoded running record (a view, not a copy). */
export function recordSeq(value: Buffer): Buffer {
  return value.subarray(SEQ_OFFSET, LOCK_OFFSET);
}

/** Lower-case hex digits by value: a lock is compared with the record's bytes digit by digit. */
const HEX_DIGITS = Array.from('0123456789abcdef', (digit) => digit.charCodeAt(0));

/**
 * Whether an encoded record is running under `lock` (32 lower-case hex
 * digits, as `newLock` makes them). Compared digit by digit against the
 * record's bytes: every finish and update checks it, and a hex string of the
 * stored lock was an allocation per check.
 */
export function recordRunningUnder(value: Buffer, lock: string): boolean {
  const first = value[0] as number;
  // A format newer than this code's is never taken for one of its own.
  if ((first & STATE_MASK) !== STATE_BYTES.running || first > (CURRENT_FORMAT_BITS | STATE_MASK)) return false;
  if (value.length < LEGACY_HEADER_BYTES || lock.length !== LOCK_BYTES * 2) return false;
  for (let i = 0; i < LOCK_BYTES; i++) {
    const byte = value[LOCK_OFFSET + i] as number;
    if (lock.charCodeAt(2 * i) !== HEX_DIGITS[byte >> 4] || lock.charCodeAt(2 * i + 1) !== HEX_DIGITS[byte & 15]) return false;
  }
  return true;
}

/**
 * A pending record a transaction read (the caller's own copy) made running
 * in place under a fresh lock, which it returns (what `newLock` would have
 * made), its sequence left for the commit to fill (as
 * `encodeJobRecord(running, true, userVersion)` would make it): no
 * allocation, no copy of the data. The lock's random bytes are copied into
 * the record as they are, rather than turned into hex and decoded back.
 */
export function makeRunningUnderNewLock(value: Buffer, userVersion: number): string {
  markRunning(value, userVersion);
  if (lockAt === LOCKS_PER_FILL) fillLocks();
  const from = lockAt * LOCK_BYTES;
  for (let i = 0; i < LOCK_BYTES; i++) value[LOCK_OFFSET + i] = lockPool[from + i] as number;
  return newLock();
}

/** A record's header made running: a fresh sequence (left for the commit) with `userVersion`, no resubmit flag. */
function markRunning(value: Buffer, userVersion: number): void {
  // The format stays: only bytes every format has change.
  value[0] = ((value[0] as number) & ~STATE_MASK) | STATE_BYTES.running;
  // The 10 commit bytes, zeroed by a loop (`fill` is a call into C++).
  for (let i = SEQ_OFFSET; i < SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2; i++) value[i] = 0;
  value.writeUInt16BE(userVersion, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  value[FLAGS_OFFSET] = (value[FLAGS_OFFSET] as number) & KEPT_FLAGS;
}

/**
 * A running record's bytes under a fresh sequence (left for the commit to
 * fill, with `userVersion`), with `data` when given (else its own): an
 * update. Lock, flags, priority, scheduled time, attempts and format stay.
 */
export function updatedRecordBytes(running: Buffer, data: Buffer | undefined, userVersion: number): Buffer {
  const value = withData(running, data);
  value.fill(0, SEQ_OFFSET, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  value.writeUInt16BE(userVersion, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  return value;
}

/**
 * A running record's bytes made finished with outcome `succeeded` at
 * `finishedAt`, with `data` when given (else its own): as `encodeJobRecord`
 * of the finished record (in the record's own format), with no sequence,
 * lock or resubmit flag.
 */
export function finishedRecordBytes(running: Buffer, data: Buffer | undefined, finishedAt: number): Buffer {
  return markFinished(withData(running, data), 'succeeded', false, finishedAt);
}

/** A copy of a record's header (in its own format) followed by `data`, or of the whole record. */
function withData(record: Buffer, data: Buffer | undefined): Buffer {
  if (data === undefined) return Buffer.from(record);
  const header = recordDataOffset(record);
  const value = Buffer.allocUnsafe(header + data.length);
  record.copy(value, 0, 0, header);
  data.copy(value, header);
  return value;
}

/**
 * {@link finishedRecordBytes} without new data, made in `running` itself
 * (a record a transaction read is the caller's own copy): no allocation.
 * `outcome` and `outcomeRow`: how the job ended, and whether the caller
 * writes a row in the outcomes subspace for it; `finishedAt`: when (the
 * caller logs it: finish-log.ts).
 */
export function finishRecordInPlace(running: Buffer, outcome: JobOutcome, outcomeRow: boolean, finishedAt: number): Buffer {
  return markFinished(running, outcome, outcomeRow, finishedAt);
}

/** A finished record's bytes (the caller's own copy) given the finish time `finishedAt`, in place. */
export function setRecordFinishedAt(value: Buffer, finishedAt: number): Buffer {
  value.writeDoubleBE(finishedAt, FINISHED_AT_OFFSET);
  return value;
}

/**
 * `value` with its count of failed attempts set to `attempts`: in place
 * when it is of the current format, else (format 0 has no room for it) the
 * record encoded anew in the current format.
 */
export function withAttempts(value: Buffer, attempts: number): Buffer {
  if (!currentFormat(value)) return encodeJobRecord({ ...decodeJobRecord(value), attempts });
  value.writeUInt32BE(Math.min(attempts, MAX_ATTEMPTS), ATTEMPTS_OFFSET);
  return value;
}

/** Makes a record's header finished at `finishedAt`: no sequence, lock or resubmit flag; its outcome bits set. */
function markFinished(value: Buffer, outcome: JobOutcome, outcomeRow: boolean, finishedAt: number): Buffer {
  value[0] = ((value[0] as number) & ~STATE_MASK) | STATE_BYTES.finished;
  value.fill(0, SEQ_OFFSET, FLAGS_OFFSET);
  value.writeDoubleBE(finishedAt, FINISHED_AT_OFFSET);
  value[FLAGS_OFFSET] = ((value[FLAGS_OFFSET] as number) & KEPT_FLAGS) | outcomeFlags(outcome, outcomeRow);
  return value;
}

export function decodeJobRecord(value: Buffer): JobRecord {
  const state = STATES[(value[0] ?? 0) & STATE_MASK];
  const header = headerBytes(value);
  if (state === undefined || header === undefined || value.length < header) {
    const format = (value[0] ?? 0) >> FORMAT_SHIFT;
    const why = header === undefined ? `format ${format}, written by a newer version of jobtree` : `state byte ${value[0]}`;
    throw new JobsError('corrupt_record', `a job record does not decode (${why}, ${value.length} bytes)`);
  }
  const running = state === 'running';
  const finished = state === 'finished';
  const flags = value[FLAGS_OFFSET] ?? 0;
  const group = recordGroup(value);
  const record: JobRecord = {
    state,
    seq: running ? Buffer.from(value.subarray(SEQ_OFFSET, LOCK_OFFSET)) : undefined,
    lock: running ? value.toString('hex', LOCK_OFFSET, FLAGS_OFFSET) : undefined,
    resubmit: (flags & RESUBMIT_FLAG) !== 0,
    continuous: (flags & CONTINUOUS_FLAG) !== 0,
    priority: value.readDoubleBE(PRIORITY_OFFSET),
    scheduledTime: value.readDoubleBE(TIME_OFFSET),
    attempts: currentFormat(value) ? value.readUInt32BE(ATTEMPTS_OFFSET) : 0,
    outcome: finished ? (OUTCOMES[(flags & OUTCOME_MASK) >> OUTCOME_SHIFT] ?? corruptOutcome(flags)) : undefined,
    outcomeRow: finished && (flags & OUTCOME_ROW_FLAG) !== 0,
    finishedAt: finished ? recordFinishedAt(value) : undefined,
    retryPolicy: (flags & RETRY_POLICY_FLAG) !== 0,
    traceContext: (flags & TRACE_CONTEXT_FLAG) !== 0,
    data: value.subarray(header),
  };
  // Left out when not in a flow or a group, as records encoded without them are.
  if (recordInFlow(value)) record.inFlow = true;
  if (group !== undefined) record.group = group;
  return record;
}

function corruptOutcome(flags: number): never {
  throw new JobsError('corrupt_record', `a finished job record has no known outcome (flags ${flags})`);
}
