// With no OpenTelemetry SDK registered, the API is a no-op: adds and runs
// work as ever and nothing is stored with the jobs for tracing, not even
// an empty row.

import test from 'ava';
import { JobKeys } from '../../packages/core/src/jobs/job-keys.js';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

const noop = new URL('../processors/fixtures/noop.ts', import.meta.url);

test('without an SDK, adds and runs store no trace context with the jobs', async (t) => {
  const { app } = await startTempApp(t);
  await app.add(T1, 'one', { n: 1 });
  await app.addMany(T1, [
    { id: 'two', data: {} },
    { id: 'three', data: {} },
  ]);
  await app.process(T1, noop, { threads: 1 });
  for (const id of ['one', 'two', 'three']) {
    await eventually(async () => (await app.getJob(T1, id))?.outcome === 'succeeded', 60_000, `${id} to succeed`);
  }
  for (const id of ['one', 'two', 'three']) t.false('traceContext' in ((await app.getJob(T1, id)) ?? {}), id);
  const { begin, end } = new JobKeys().traceContexts.range();
  t.deepEqual(await app.database.doTransaction((tx) => tx.getRange(begin, end)), []);
});
