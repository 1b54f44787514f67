// A job's trace context (`add(type, id, data, { traceContext })`): a small
// map of strings, opaque to the store (the app puts a W3C `traceparent` and
// `tracestate` there, so that a job's runs join the trace of the add that
// made it), kept as JSON in its own row, (trace_contexts, type, id), apart
// from the job's data, and flagged in the job's record so that an accept
// reads the row only for the jobs that have one. A job added without one
// writes nothing: jobs added with no tracing cost no extra key.

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import { getMany } from '../storage/fast-paths.js';
import type { Job, TraceContext } from './interfaces.js';
import { decodeJobData, encodeJobData } from './job-data.js';
import { describe } from './job-input.js';
import type { TypeKeys } from './job-keys.js';

/** The most entries a trace context has (a traceparent, a tracestate, some baggage). */
export const MAX_TRACE_CONTEXT_ENTRIES = 16;
/** The most bytes a trace context takes as JSON: it is carried, not stored for its own sake. */
export const MAX_TRACE_CONTEXT_BYTES = 4096;

/**
 * `add`'s `traceContext` option, checked and encoded as its row stores it:
 * a plain object of up to 16 string values, at most 4 KiB as JSON; an
 * empty one is no context. Anything else is `invalid_option`.
 */
export function encodeTraceContext(traceContext: unknown): Buffer | undefined {
  if (traceContext === undefined) return undefined;
  if (typeof traceContext !== 'object' || traceContext === null || Array.isArray(traceContext)) {
    throw new JobsError('invalid_option', `traceContext is an object of strings (a W3C traceparent and tracestate, say), got ${describe(traceContext)}`);
  }
  const entries = Object.entries(traceContext);
  if (entries.length === 0) return undefined;
  if (entries.length > MAX_TRACE_CONTEXT_ENTRIES) {
    throw new JobsError('invalid_option', `traceContext has at most ${MAX_TRACE_CONTEXT_ENTRIES} entries, got ${entries.length}`);
  }
  for (const [key, value] of entries) {
    if (typeof value !== 'string') throw new JobsError('invalid_option', `traceContext.${key} is a string, got ${describe(value)}`);
  }
  const row = encodeJobData(traceContext);
  if (row.length > MAX_TRACE_CONTEXT_BYTES) {
    throw new JobsError('invalid_option', `traceContext is at most ${MAX_TRACE_CONTEXT_BYTES} bytes as JSON, got ${row.length}`);
  }
  return row;
}

/** Writes (or replaces) the trace context row of job `id`. */
export function writeTraceContext(tx: Transaction, keys: TypeKeys, id: string, row: Buffer): void {
  tx.set(keys.traceContextKey(id), row);
}

/** Clears the trace context row of job `id`, when its record says it has one. */
export function clearTraceContext(tx: Transaction, keys: TypeKeys, id: string, hasContext: boolean): void {
  if (hasContext) tx.clear(keys.traceContextKey(id));
}

/** A stored trace context row as `Job.traceContext` gives it. */
export function decodeTraceContext(row: Buffer): TraceContext {
  return decodeJobData(row) as TraceContext;
}

/**
 * Puts their trace contexts on the handles of `jobs` at `indexes` (jobs
 * whose records say they carry one), read in one batch: an array at once
 * on the embedded engine. A row gone missing leaves its job without one.
 */
export function attachTraceContexts(tx: Transaction, keys: TypeKeys, jobs: Job[], indexes: readonly number[]): void | Promise<void> {
  if (indexes.length === 0) return;
  const read = getMany(
    tx,
    indexes.map((index) => keys.traceContextKey((jobs[index] as Job).id)),
  );
  const attach = (rows: (Buffer | undefined)[]): void => {
    for (let i = 0; i < indexes.length; i++) {
      const row = rows[i];
      if (row !== undefined) (jobs[indexes[i] as number] as { traceContext?: TraceContext }).traceContext = decodeTraceContext(row);
    }
  };
  if (Array.isArray(read)) attach(read);
  else return read.then(attach);
}
