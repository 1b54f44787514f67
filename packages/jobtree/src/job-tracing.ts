// OpenTelemetry spans for jobs, through `@opentelemetry/api` alone: the
// application's own SDK (if it registers one) records and exports them; with
// none, every tracer is the API's no-op and nothing here allocates more than
// the no-op span it drops at once.
//
// An add (`app.add`, one span for a whole `app.addMany`) has a span, and
// when that span records, its context goes with the job into the store (the
// job's trace context, a W3C traceparent and tracestate in a row of its
// own, written in the add's transaction). Each run of the job (each attempt
// of `app.process`) has a span whose parent is that context, read back with
// the job when it is taken: every run joins the trace of the add that made
// the job, in whichever process runs it. A parent rather than a link: a job
// is made by one add and run for it, the trace shows the add and each of
// its attempts as one tree (messaging conventions make a consumer's span a
// child of the producer's when it handles one message), and a run long
// after its add still nests under it. A job added with no recording span
// (no SDK, or sampled out) carries no context, writes no extra row, and its
// runs' spans, if the running process records, are roots.

import {
  type Attributes,
  type Context,
  context,
  createTraceState,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { AddOptions, FlowSpec, Job, JobSpec, TraceContext } from '@jobtree/core';

/** The span of an add (`app.add`, or a whole `app.addMany`). */
export const ADD_SPAN_NAME = 'jobtree.add';
/** The span of one run of a job (one attempt of its `app.process` handler). */
export const RUN_SPAN_NAME = 'jobtree.run';

/** Span attributes (see the docs' observability page). */
export const TRACE_ATTRIBUTES = {
  type: 'jobtree.job.type',
  id: 'jobtree.job.id',
  /** `addMany`: how many jobs the call adds. */
  count: 'jobtree.job.count',
  attempt: 'jobtree.run.attempt',
  outcome: 'jobtree.run.outcome',
} as const;

/**
 * How a run ended, as its span says: `succeeded` (its handler resolved),
 * `failed` (it crashed and the job was given up), `retried` (it crashed and
 * the job runs again after its backoff), `cancelled` (the job was removed or
 * cancelled while it ran), `lost` (its thread went down under another job's
 * fault: it runs again at once) or `stopped` (rotated out, or a shutdown
 * gave it back to the queue).
 */
export type RunSpanOutcome = 'succeeded' | 'failed' | 'retried' | 'cancelled' | 'lost' | 'stopped';

/** A run's span while it runs, on the scheduler's record of the run. */
export interface TracedRun {
  span: Span | undefined;
}

/** Why a run crashed, as the scheduler keeps it. */
export interface RunSpanError {
  name: string;
  message: string;
}

const tracer = trace.getTracer('jobtree');

/** The add's span when a tracer records it; `undefined` otherwise (nothing to end). */
function startAddSpan(type: string, attributes: Attributes): Span | undefined {
  const span = tracer.startSpan(ADD_SPAN_NAME, { kind: SpanKind.PRODUCER });
  if (!span.isRecording()) return undefined;
  span.setAttributes({ [TRACE_ATTRIBUTES.type]: type, ...attributes });
  return span;
}

/**
 * `add(options)` under an add span: with a recording span, `options` gain
 * the span's trace context (unless they bring their own), and the span ends
 * with the add, its status ERROR when the add rejects.
 */
export function tracedAdd<R>(type: string, id: string, options: AddOptions | undefined, add: (options: AddOptions | undefined) => Promise<R>): Promise<R> {
  const span = startAddSpan(type, { [TRACE_ATTRIBUTES.id]: id });
  if (span === undefined) return add(options);
  return endWith(span, () => add(options?.traceContext !== undefined ? options : { ...options, traceContext: traceContextOf(span) }));
}

/** `addMany(jobs)` under one add span for the whole call (see {@link tracedAdd}); each job gains its context. */
export function tracedAddMany<R, T extends string>(type: string, jobs: readonly JobSpec<T>[], addMany: (jobs: readonly JobSpec<T>[]) => Promise<R>): Promise<R> {
  // A bad argument is the call's to refuse, as it would untraced.
  const span = Array.isArray(jobs) ? startAddSpan(type, { [TRACE_ATTRIBUTES.count]: jobs.length }) : undefined;
  if (span === undefined) return addMany(jobs);
  const traceContext = traceContextOf(span);
  return endWith(span, () =>
    addMany(jobs.map((spec) => (typeof spec === 'object' && spec !== null && spec.traceContext === undefined ? { ...spec, traceContext } : spec))),
  );
}

/**
 * `addFlow(flow)` under one add span for the whole flow, named after its
 * root (its type and id, and the count of jobs); every job of the flow that
 * brings no trace context of its own gains the span's.
 */
export function tracedAddFlow<R>(flow: FlowSpec, addFlow: (flow: FlowSpec) => Promise<R>): Promise<R> {
  if (typeof flow !== 'object' || flow === null) return addFlow(flow);
  const span = startAddSpan(String(flow.type), { [TRACE_ATTRIBUTES.id]: String(flow.id), [TRACE_ATTRIBUTES.count]: countFlowJobs(flow, new Set()) });
  if (span === undefined) return addFlow(flow);
  const traceContext = traceContextOf(span);
  return endWith(span, () => addFlow(withTraceContext(flow, traceContext, new Set())));
}

/** The jobs of a flow as given (a bad one is the add's to refuse: a node seen twice is counted once). */
function countFlowJobs(node: FlowSpec, seen: Set<object>): number {
  if (seen.has(node)) return 0;
  seen.add(node);
  let count = 1;
  for (const child of Array.isArray(node.children) ? node.children : []) {
    if (typeof child === 'object' && child !== null) count += countFlowJobs(child, seen);
  }
  return count;
}

/** A copy of `node` (and its children) where each job without a trace context has `traceContext`. */
function withTraceContext(node: FlowSpec, traceContext: TraceContext, seen: Set<object>): FlowSpec {
  // A node met again is a loop: left as it is, for addFlow to refuse.
  if (seen.has(node)) return node;
  seen.add(node);
  const copy: FlowSpec = node.traceContext === undefined ? { ...node, traceContext } : { ...node };
  if (Array.isArray(node.children)) {
    copy.children = node.children.map((child) => (typeof child === 'object' && child !== null ? withTraceContext(child, traceContext, seen) : child));
  }
  return copy;
}

/** Runs `call` and ends `span` when it settles: with status ERROR and the exception when it fails. */
function endWith<R>(span: Span, call: () => Promise<R>): Promise<R> {
  let result: Promise<R>;
  try {
    result = call();
  } catch (error) {
    failSpan(span, error);
    span.end();
    throw error;
  }
  return result.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      failSpan(span, error);
      span.end();
      throw error;
    },
  );
}

function failSpan(span: Span, error: unknown): void {
  const { name, message } = error instanceof Error ? error : { name: 'Error', message: String(error) };
  span.recordException({ name, message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * The context of `span` as a job carries it: what the application's
 * propagator injects (W3C traceparent and tracestate with the SDK's
 * defaults, its baggage too), and the W3C traceparent regardless, so that a
 * run can find its parent whatever propagator the running process has.
 */
export function traceContextOf(span: Span): TraceContext {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  if (carrier.traceparent === undefined) {
    const { traceId, spanId, traceFlags, traceState } = span.spanContext();
    carrier.traceparent = `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
    const state = traceState?.serialize();
    if (state) carrier.tracestate = state;
  }
  return carrier;
}

/** The context a job's trace context names: the application's propagator's reading, else the W3C traceparent's. */
export function contextFromTraceContext(traceContext: TraceContext): Context {
  const extracted = propagation.extract(ROOT_CONTEXT, traceContext);
  if (trace.getSpanContext(extracted) !== undefined) return extracted;
  const parent = parseTraceparent(traceContext.traceparent, traceContext.tracestate);
  return parent === undefined ? extracted : trace.setSpanContext(extracted, parent);
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context of a W3C traceparent (`version-traceid-spanid-flags`), or `undefined` when it is not one. */
function parseTraceparent(traceparent: string | undefined, tracestate: string | undefined): SpanContext | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  if (match === null || match[1] === 'ff') return undefined;
  const spanContext: SpanContext = {
    traceId: match[2] as string,
    spanId: match[3] as string,
    traceFlags: Number.parseInt(match[4] as string, 16),
    isRemote: true,
  };
  if (tracestate !== undefined) spanContext.traceState = createTraceState(tracestate);
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/**
 * Starts the span of a run of `job` (its `attempt`-th in a row), child of
 * the context its add stored; `undefined` when no tracer records it.
 */
export function startRunSpan(job: Job, attempt: number): Span | undefined {
  const parent = job.traceContext === undefined ? ROOT_CONTEXT : contextFromTraceContext(job.traceContext);
  const span = tracer.startSpan(RUN_SPAN_NAME, { kind: SpanKind.CONSUMER }, parent);
  if (!span.isRecording()) return undefined;
  span.setAttributes({ [TRACE_ATTRIBUTES.type]: job.type, [TRACE_ATTRIBUTES.id]: job.id, [TRACE_ATTRIBUTES.attempt]: attempt });
  return span;
}

/**
 * Calls `fn` with `span` (a run's) as the active span, so that the spans an
 * in-process handler starts, across its awaits, are the run's children (when
 * the application registered a context manager, as its SDK does); with no
 * span, just calls it.
 */
export function inRunSpan<R>(span: Span | undefined, fn: () => R): R {
  return span === undefined ? fn() : context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * Ends `run`'s span, if it has one still open, with how the run ended; a
 * crash (`error`) sets its status to ERROR and records the error.
 */
export function endRunSpan(run: TracedRun, outcome: RunSpanOutcome, error?: RunSpanError): void {
  const span = run.span;
  if (span === undefined) return;
  run.span = undefined;
  span.setAttribute(TRACE_ATTRIBUTES.outcome, outcome);
  if (error !== undefined) {
    span.recordException({ name: error.name, message: error.message });
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  }
  span.end();
}
