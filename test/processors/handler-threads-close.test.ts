// Closing the handler threads never ends a thread in the middle of an
// import: a thread terminated while it loads a native addon (lmdb, under a
// handler module's imports) can abort the whole process. Threads still
// starting, or loading a handler module, finish that before they end.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { HandlerThreads } from '../../packages/jobtree/src/processors/handler-threads.js';
import { fixture } from './scheduler-harness.js';

test('close right after a load waits for every thread to finish importing the module', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const marker = join(dir, 'loaded');
  process.env.SLOW_LOAD_MARKER = marker;
  t.teardown(() => {
    delete process.env.SLOW_LOAD_MARKER;
  });
  const threads = new HandlerThreads({ threads: 2 });
  const loading = threads.load(fixture('slow-to-load').href).catch((error: unknown) => error);
  await threads.close();
  const finished = (await readFile(marker, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  t.is(finished.length, 2, 'each thread finished importing before it ended');
  t.like(await loading, { code: 'stopped' });
});
