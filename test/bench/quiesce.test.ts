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

test('quiesce collects the garbage an earlier run left in this process', async (t) => {
  let ref: WeakRef<object> | undefined;
  (() => {
    ref = new WeakRef({ leftover: new Array(1000).fill(1) });
  })();
  await new Quiescer(undefined).quiesce();
  t.is(ref?.deref(), undefined);
});

test('quiesce fails with server_failed when Postgres cannot checkpoint', async (t) => {
  const error = await t.throwsAsync(new Quiescer(recordingClient(true)).quiesce());
  t.true(error instanceof PeerBenchError);
  t.is((error as PeerBenchError).code, 'server_failed');
});
