// With an OpenTelemetry SDK registered (an in-memory exporter here), an add
// has a span and each run of the job a span whose parent is the add's span,
// in the same trace, found through the trace context the job carries in the
// store: a failing run's span has status ERROR and the error, a retry after
// a failed attempt is a second run span under the same parent, and an
// addMany is one span for all its jobs. A client process of a shared store
// traces alike, its add's context crossing to the owner's store and back.
// An in-process handler runs inside its run's span: the spans it starts
// are the run's children.

import { type SpanContext, SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import test from 'ava';
import { startJobs } from 'jobtree';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';
import { Peer, tempDataDir } from '../sharing/fixtures/peers.js';

const noop = new URL('../processors/fixtures/noop.ts', import.meta.url);
const crash = new URL('../processors/fixtures/crash.ts', import.meta.url);
const crashOnce = new URL('./fixtures/crash-once-handler.ts', import.meta.url);

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
// What an application's SDK registers (NodeSDK does): the active span follows async calls.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

/** The ended spans named `name` whose job id attribute is `id`. */
function spansOf(name: string, id: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.name === name && span.attributes['jobtree.job.id'] === id);
}

async function runSpans(id: string, count: number): Promise<ReadableSpan[]> {
  await eventually(() => spansOf('jobtree.run', id).length >= count, 60_000, `${count} run spans of ${id}`);
  return spansOf('jobtree.run', id).sort((a, b) => Number(a.attributes['jobtree.run.attempt']) - Number(b.attributes['jobtree.run.attempt']));
}

function isChildOf(span: ReadableSpan, parent: SpanContext): boolean {
  return span.spanContext().traceId === parent.traceId && span.parentSpanContext?.spanId === parent.spanId;
}

test('an add then a run make an add span and a run span whose parent is the add span, in the same trace', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'ok', { n: 1 });
  const [add] = spansOf('jobtree.add', 'ok');
  if (add === undefined) throw new Error('no add span');
  t.is(add.kind, SpanKind.PRODUCER);
  t.like(add.attributes, { 'jobtree.job.type': T1, 'jobtree.job.id': 'ok' });
  // What the store keeps with the job: the add span's W3C context.
  const { traceId, spanId } = add.spanContext();
  t.regex((await app.getJob(T1, 'ok'))?.traceContext?.traceparent ?? '', new RegExp(`^00-${traceId}-${spanId}-01$`));

  await app.process(T1, noop, { threads: 1 });
  const [run] = await runSpans('ok', 1);
  if (run === undefined) throw new Error('no run span');
  t.true(isChildOf(run, add.spanContext()));
  t.is(run.kind, SpanKind.CONSUMER);
  t.like(run.attributes, { 'jobtree.job.type': T1, 'jobtree.job.id': 'ok', 'jobtree.run.attempt': 1, 'jobtree.run.outcome': 'succeeded' });
  t.is(run.status.code, SpanStatusCode.UNSET);
});

test('an add that fails has its span end with status ERROR and the error', async (t) => {
  const { app } = await startTempApp(t);
  await t.throwsAsync(app.add('no-timeout', 'refused'), { code: 'no_type_timeout' });
  const [add] = spansOf('jobtree.add', 'refused');
  t.is(add?.status.code, SpanStatusCode.ERROR);
  t.like(add?.events.find((event) => event.name === 'exception')?.attributes, { 'exception.type': 'JobsError' });
});

test("a failing run's span has status ERROR and the error, and the job's outcome failed", async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'bad');
  const [add] = spansOf('jobtree.add', 'bad');
  await app.process(T1, crash, { threads: 1, attempts: 1 });
  const [run] = await runSpans('bad', 1);
  if (run === undefined || add === undefined) throw new Error('missing spans');
  t.true(isChildOf(run, add.spanContext()));
  t.like(run.attributes, { 'jobtree.run.outcome': 'failed', 'jobtree.run.attempt': 1 });
  t.deepEqual(run.status, { code: SpanStatusCode.ERROR, message: 'boom' });
  t.like(run.events.find((event) => event.name === 'exception')?.attributes, { 'exception.message': 'boom' });
  await eventually(async () => (await app.getJob(T1, 'bad'))?.outcome === 'failed', 10_000, 'the job to fail');
});

test('a retry after a failed attempt is a second run span under the same parent', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'again');
  const [add] = spansOf('jobtree.add', 'again');
  if (add === undefined) throw new Error('no add span');
  await app.process(T1, crashOnce, { threads: 1, backoff: { type: 'fixed', delayMs: 0 } });
  const [first, second] = await runSpans('again', 2);
  if (first === undefined || second === undefined) throw new Error('missing run spans');
  t.like(first.attributes, { 'jobtree.run.attempt': 1, 'jobtree.run.outcome': 'retried' });
  t.is(first.status.code, SpanStatusCode.ERROR);
  t.like(second.attributes, { 'jobtree.run.attempt': 2, 'jobtree.run.outcome': 'succeeded' });
  t.is(second.status.code, SpanStatusCode.UNSET);
  t.true(isChildOf(first, add.spanContext()));
  t.true(isChildOf(second, add.spanContext()));
  t.not(first.spanContext().spanId, second.spanContext().spanId);
});

test("addMany is one add span for all its jobs, each job's runs under it; an add's own traceContext is kept", async (t) => {
  const { app } = await startTempApp(t);
  await app.addMany(T1, [
    { id: 'm1', data: {} },
    { id: 'm2', data: {} },
  ]);
  const batch = exporter.getFinishedSpans().filter((span) => span.name === 'jobtree.add' && span.attributes['jobtree.job.count'] === 2);
  t.is(batch.length, 1);
  const own = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  await app.add(T1, 'own', {}, { traceContext: own });
  t.deepEqual((await app.getJob(T1, 'own'))?.traceContext, own);
  await app.process(T1, noop, { threads: 1 });
  for (const id of ['m1', 'm2']) {
    const [run] = await runSpans(id, 1);
    t.true(run !== undefined && isChildOf(run, (batch[0] as ReadableSpan).spanContext()), id);
    t.is(run?.attributes['jobtree.run.outcome'], 'succeeded', id);
  }
  const [ownRun] = await runSpans('own', 1);
  t.is(ownRun?.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
  t.is(ownRun?.parentSpanContext?.spanId, 'b7ad6b7169203331');
});

test("addFlow is one add span for the whole flow: every job of it, nested ones too, carries its context; a job's own is kept", async (t) => {
  const { app } = await startTempApp(t);
  const own = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  await app.addFlow({ type: T1, id: 'flow-root', children: [{ type: T1, id: 'flow-mid', children: [{ type: T1, id: 'flow-leaf' }] }, { type: T1, id: 'flow-own', traceContext: own }] });
  const [add] = spansOf('jobtree.add', 'flow-root');
  if (add === undefined) throw new Error('no add span');
  t.like(add.attributes, { 'jobtree.job.type': T1, 'jobtree.job.count': 4 });
  const { traceId, spanId } = add.spanContext();
  for (const id of ['flow-root', 'flow-mid', 'flow-leaf']) {
    t.regex((await app.getJob(T1, id))?.traceContext?.traceparent ?? '', new RegExp(`^00-${traceId}-${spanId}-01$`), id);
  }
  t.deepEqual((await app.getJob(T1, 'flow-own'))?.traceContext, own);
});

test('a client process of a shared store traces its adds and runs alike, the context kept by the owner', async (t) => {
  const dir = await tempDataDir(t, 'tracing-client');
  const owner = await Peer.start(t, { kind: 'app', path: dir });
  t.is(owner.role, 'owner');
  const app = await startJobs({ path: dir, role: 'client', threads: 1, handlerThreads: 1, logLevel: 'silent', typeMonitorHoldoffMs: 0 });
  t.teardown(() => app.close());
  t.is(app.role, 'client');
  await app.setTypeTimeout(T1, 30);
  await app.add(T1, 'remote', {});
  const [add] = spansOf('jobtree.add', 'remote');
  if (add === undefined) throw new Error('no add span');
  const stored = (await owner.run(`return (await app.getJob('${T1}', 'remote')).traceContext`)) as { traceparent: string };
  t.true(stored.traceparent.includes(add.spanContext().spanId));
  await app.process(T1, noop, { threads: 1 });
  const [run] = await runSpans('remote', 1);
  t.true(run !== undefined && isChildOf(run, add.spanContext()));
  t.is(run?.attributes['jobtree.run.outcome'], 'succeeded');
});

test("an in-process handler runs inside its run's span: a span it starts, even after an await, is the run span's child", async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'nested');
  const tracer = trace.getTracer('the-application');
  await app.process(T1, async () => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    tracer.startActiveSpan('app.work', (span) => span.end());
  });
  const [run] = await runSpans('nested', 1);
  const work = exporter.getFinishedSpans().find((span) => span.name === 'app.work');
  if (run === undefined || work === undefined) throw new Error('missing spans');
  t.true(isChildOf(work, run.spanContext()));
});
