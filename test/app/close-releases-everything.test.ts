// An app started and closed many times in one process (an app per test, a
// supervised service that restarts its app) leaves nothing behind after each
// close: none of its embedded stores stays reachable through lmdb-js's
// process-wide registry of opened stores, and no listener stays on `process`.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import test from 'ava';
import * as lmdb from 'lmdb';
import { startJobs } from 'jobtree';
import greet from './fixtures/greet-handler.js';
import { T1 } from './fixtures/temp-app.js';

/** lmdb-js's registry of opened stores: exported at runtime, absent from its types. */
const openedStores = (lmdb as unknown as { allDbs: Map<string, unknown> }).allDbs;

const PROCESS_EVENTS = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'uncaughtException', 'unhandledRejection', 'warning'] as const;

function processListeners(): Record<string, number> {
  return Object.fromEntries(PROCESS_EVENTS.map((event) => [event, process.listenerCount(event)]));
}

function storesOf(dir: string): string[] {
  const name = basename(dir);
  return [...openedStores.keys()].filter((key) => key === name || key.startsWith(`${name}-`));
}

/** Starts an app on a fresh directory, runs one job through a handler, closes the app; returns the directory. */
async function oneCycle(runIn: 'main' | 'threads'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-close-releases-'));
  const app = await startJobs({ path: dir, threads: 1, handlerThreads: 1, logLevel: 'silent' });
  try {
    await app.jobs.setTypeTimeout(T1, 30);
    await app.process(T1, greet, { interval: 50, threads: 1, runIn });
    await app.add(T1, 'ada', { name: 'Ada' });
    const sub = await app.subscribe(T1, 'ada');
    await app.wait(sub, 'finished', 20_000);
  } finally {
    await app.close();
  }
  return dir;
}

for (const runIn of ['main', 'threads'] as const) {
  test.serial(`a closed app leaves none of its stores in lmdb-js's registry and no listener on process (handler on ${runIn === 'main' ? 'the main thread' : 'threads'})`, async (t) => {
    // The first app in a process registers what lmdb-js and Node register once per process.
    const first = await oneCycle(runIn);
    t.teardown(() => rm(first, { recursive: true, force: true }));
    const listeners = processListeners();
    const second = await oneCycle(runIn);
    t.teardown(() => rm(second, { recursive: true, force: true }));
    t.deepEqual(storesOf(first), []);
    t.deepEqual(storesOf(second), []);
    t.deepEqual(processListeners(), listeners);
  });
}
