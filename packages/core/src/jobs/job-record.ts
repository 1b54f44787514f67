// The value of a job's data row, (data, type, id) -> (seq, lock, flags, prio,
// stime, data). It is a fixed binary header followed by
// the JSON data rather than a packed tuple: reading a job's state, lock or
// schedule needs no tuple decode and no JSON parse, and the
// running sequence sits at a fixed offset where `setVersionstampedValue`
// fills it in at commit.

import { randomFillSync } from 'node:crypto';
import { JobsError } from '../errors.js';
import { TUPLE_VERSIONSTAMP_LENGTH } from '../keys/versionstamp.js';

export type JobState = 'pending' | 'running' | 'finished';

const STATE_BYTES: Record<JobState, number> = { pending: 1, running: 2, finished: 3 };
const STATES: Record<number, JobState> = { 1: 'pending', 2: 'running', 3: 'finished' };

const SEQ_OFFSET = 1;
const LOCK_OFFSET = SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH; // 13
const LOCK_BYTES = 16;
/**
 * One byte of flags: bit 0 resubmit, bit 1 continuous. Records written
 * before the continuous flag existed hold 0 or 1 here, so they read back as
 * one-shot jobs.
 */
const FLAGS_OFFSET = LOCK_OFFSET + LOCK_BYTES; // 29
const RESUBMIT_FLAG = 1;
const CONTINUOUS_FLAG = 2;
const PRIORITY_OFFSET = FLAGS_OFFSET + 1; // 30
const TIME_OFFSET = PRIORITY_OFFSET + 8; // 38
/** Bytes before the JSON data. */
export const RECORD_HEADER_BYTES = TIME_OFFSET + 8; // 46

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
  /** The data as UTF-8 JSON, not parsed. */
  data: Buffer;
}

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
export function encodeJobRecord(record: JobRecord, freshSeq = false, userVersion = 0): Buffer {
  // From Node's pool (Buffer.alloc made an ArrayBuffer per record); every
  // byte is written below: the sequence and lock zeroed, then set if running.
  const value = Buffer.allocUnsafe(RECORD_HEADER_BYTES + record.data.length);
  value[0] = STATE_BYTES[record.state];
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
  value[FLAGS_OFFSET] = (record.resubmit ? RESUBMIT_FLAG : 0) | (record.continuous ? CONTINUOUS_FLAG : 0);
  value.writeDoubleBE(record.priority, PRIORITY_OFFSET);
  value.writeDoubleBE(record.scheduledTime, TIME_OFFSET);
  record.data.copy(value, RECORD_HEADER_BYTES);
  return value;
}

// --- reading and rewriting encoded records in place -----------------------
// accept and finish change only a few header bytes of a record: they work
// on its bytes rather than decode it to an object and encode it again
// (which copied the data twice and allocated the sequence and lock).

/** The state of an encoded record; `corrupt_record` when it does not decode. */
export function recordState(value: Buffer): JobState {
  const state = STATES[value[0] ?? 0];
  if (state === undefined || value.length < RECORD_HEADER_BYTES) decodeJobRecord(value); // throws corrupt_record
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

export function recordResubmit(value: Buffer): boolean {
  return ((value[FLAGS_OFFSET] ?? 0) & RESUBMIT_FLAG) !== 0;
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
  if (value[0] !== STATE_BYTES.running || value.length < RECORD_HEADER_BYTES || lock.length !== LOCK_BYTES * 2) return false;
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
  value[0] = STATE_BYTES.running;
  // The 10 commit bytes, zeroed by a loop (`fill` is a call into C++).
  for (let i = SEQ_OFFSET; i < SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2; i++) value[i] = 0;
  value.writeUInt16BE(userVersion, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  value[FLAGS_OFFSET] = (value[FLAGS_OFFSET] as number) & CONTINUOUS_FLAG;
}

/**
 * A running record's bytes under a fresh sequence (left for the commit to
 * fill, with `userVersion`), with `data` when given (else its own): an
 * update. Lock, flags, priority and scheduled time stay.
 */
export function updatedRecordBytes(running: Buffer, data: Buffer | undefined, userVersion: number): Buffer {
  const own = data === undefined;
  const length = RECORD_HEADER_BYTES + (own ? running.length - RECORD_HEADER_BYTES : data.length);
  const value = Buffer.allocUnsafe(length);
  running.copy(value, 0, 0, own ? running.length : RECORD_HEADER_BYTES);
  if (!own) data.copy(value, RECORD_HEADER_BYTES);
  value.fill(0, SEQ_OFFSET, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  value.writeUInt16BE(userVersion, SEQ_OFFSET + TUPLE_VERSIONSTAMP_LENGTH - 2);
  return value;
}

/**
 * A running record's bytes made finished, with `data` when given (else its
 * own): as `encodeJobRecord` of the finished record, with no sequence, lock
 * or resubmit flag.
 */
export function finishedRecordBytes(running: Buffer, data: Buffer | undefined): Buffer {
  const own = data === undefined;
  const length = RECORD_HEADER_BYTES + (own ? running.length - RECORD_HEADER_BYTES : data.length);
  const value = Buffer.allocUnsafe(length);
  running.copy(value, 0, 0, own ? running.length : RECORD_HEADER_BYTES);
  if (!own) data.copy(value, RECORD_HEADER_BYTES);
  return markFinished(value);
}

/**
 * {@link finishedRecordBytes} without new data, made in `running` itself
 * (a record a transaction read is the caller's own copy): no allocation.
 */
export function finishRecordInPlace(running: Buffer): Buffer {
  return markFinished(running);
}

/** Makes a record's header finished: no sequence, lock or resubmit flag. */
function markFinished(value: Buffer): Buffer {
  value[0] = STATE_BYTES.finished;
  value.fill(0, SEQ_OFFSET, FLAGS_OFFSET);
  value[FLAGS_OFFSET] = (value[FLAGS_OFFSET] as number) & CONTINUOUS_FLAG;
  return value;
}

export function decodeJobRecord(value: Buffer): JobRecord {
  const state = STATES[value[0] ?? 0];
  if (state === undefined || value.length < RECORD_HEADER_BYTES) {
    throw new JobsError('corrupt_record', `a job record does not decode (state byte ${value[0]}, ${value.length} bytes)`);
  }
  const running = state === 'running';
  return {
    state,
    seq: running ? Buffer.from(value.subarray(SEQ_OFFSET, LOCK_OFFSET)) : undefined,
    lock: running ? value.toString('hex', LOCK_OFFSET, FLAGS_OFFSET) : undefined,
    resubmit: ((value[FLAGS_OFFSET] ?? 0) & RESUBMIT_FLAG) !== 0,
    continuous: ((value[FLAGS_OFFSET] ?? 0) & CONTINUOUS_FLAG) !== 0,
    priority: value.readDoubleBE(PRIORITY_OFFSET),
    scheduledTime: value.readDoubleBE(TIME_OFFSET),
    data: value.subarray(RECORD_HEADER_BYTES),
  };
}
