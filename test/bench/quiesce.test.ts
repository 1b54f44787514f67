import { constants, PerformanceObserver } from 'node:perf_hooks';
import test from 'ava';
import { PeerBenchError } from '../../bench/peers/errors.js';
import type { PgClient } from '../../bench/peers/peer-modules.js';
import { Quiescer } from '../../bench/peers/quiesce.js';

function recordingClient(fail = false): PgClient & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    async connect() {},
    async end() {},
    async query(text: string) {
      queries.push(text);
      if (fail) throw new Error('connection terminated');
      return { rows: [] };
    },
  };
}

test('quiesce checkpoints Postgres before the next run', async (t) => {
  const client = recordingClient();
  await new Quiescer(client).quiesce();
  t.deepEqual(client.queries, ['CHECKPOINT']);
});

test('quiesce forces no garbage collection, which would throw away compiled code', async (t) => {
  const forced: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const flags = (entry as { detail?: { flags?: number } }).detail?.flags ?? 0;
      if (flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced.push(flags);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    await new Quiescer(undefined).quiesce();
    // gc entries are delivered after the collection, on a later turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    observer.disconnect();
  }
  t.deepEqual(forced, []);
});

test('quiesce fails with server_failed when Postgres cannot checkpoint', async (t) => {
  const error = await t.throwsAsync(new Quiescer(recordingClient(true)).quiesce());
  t.true(error instanceof PeerBenchError);
  t.is((error as PeerBenchError).code, 'server_failed');
});
