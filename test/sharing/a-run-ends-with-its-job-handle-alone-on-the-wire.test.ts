// A worker in a client ends a run (finish, complete, fail, failAttempt and
// their batches) by sending the owner what the owner reads of its job: the
// type, the id and the lock. The rest of a taken job (its data above all)
// would be packed in the client and unpacked by the owner, for each job of
// a drain, for nothing.

import test, { type ExecutionContext } from 'ava';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import { openJobs } from '../../packages/core/src/jobs/open-jobs.js';
import type { SharedJobs } from '../../packages/core/src/sharing/shared-jobs.js';
import { storeSocket } from '../../packages/core/src/sharing/socket-path.js';
import { type ServedMethod, StoreServer } from '../../packages/core/src/sharing/store-server.js';
import { tempDataDir } from './fixtures/peers.js';

const job = {
  type: 't1',
  id: 'j1',
  lock: 'l1',
  data: { payload: 'x'.repeat(1000) },
  priority: 3,
  scheduledTime: 1,
  resubmit: false,
  continuous: false,
  attempts: 2,
  retry: { attempts: 5 },
  traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  group: 'g1',
} as unknown as Job;

const handle = { type: 't1', id: 'j1', lock: 'l1' };

/** An owner that records the arguments of each call as they arrive, and a client of it. */
async function clientOfRecordingServer(t: ExecutionContext): Promise<{ jobs: SharedJobs; received: Map<string, unknown[]> }> {
  const dir = await tempDataDir(t, 'ending-handle');
  const received = new Map<string, unknown[]>();
  const recorded = (name: string, answer: (args: unknown[]) => unknown): [string, ServedMethod] => [
    name,
    (args) => {
      received.set(name, args);
      return answer(args);
    },
  ];
  const one = () => 'finished';
  const each = (args: unknown[]) => (args[0] as unknown[]).map(() => ({ status: 'fulfilled', value: 'finished' }));
  const methods = new Map<string, ServedMethod>([
    recorded('finish', one),
    recorded('complete', one),
    recorded('fail', one),
    recorded('failAttempt', () => 'pending'),
    recorded('finishMany', each),
    recorded('completeMany', each),
    recorded('failMany', each),
  ]);
  const server = await StoreServer.listen(storeSocket(dir), methods);
  server.openGate();
  t.teardown(() => server.close());
  const jobs = (await openJobs({ path: dir, role: 'client' })) as SharedJobs;
  t.teardown(() => jobs.close());
  return { jobs, received };
}

test('a finish, complete, fail or failAttempt from a client carries only the job type, id and lock', async (t) => {
  const { jobs, received } = await clientOfRecordingServer(t);
  await jobs.finish(job, { done: true });
  await jobs.complete(job, 42);
  await jobs.fail(job, { message: 'no' });
  await jobs.failAttempt(job, { scheduledTime: 5 });
  t.deepEqual(received.get('finish'), [handle, { done: true }]);
  t.deepEqual(received.get('complete'), [handle, 42]);
  t.deepEqual((received.get('fail') as unknown[])[0], handle);
  t.deepEqual(received.get('failAttempt'), [handle, { scheduledTime: 5 }]);
});

test('the items of finishMany, completeMany and failMany from a client carry only the job type, id and lock, and no absent data or result', async (t) => {
  const { jobs, received } = await clientOfRecordingServer(t);
  await jobs.finishMany([{ job }, { job, data: 1 }]);
  await jobs.completeMany([{ job }, { job, result: 'r' }]);
  await jobs.failMany([{ job, error: { message: 'no' } }]);
  t.deepEqual(received.get('finishMany'), [[{ job: handle }, { job: handle, data: 1 }]]);
  t.deepEqual(received.get('completeMany'), [[{ job: handle }, { job: handle, result: 'r' }]]);
  const [[failed]] = received.get('failMany') as [[{ job: unknown }]];
  t.deepEqual(failed.job, handle);
});

test('a bad job handle is refused in the client with the error the owner gives, and nothing crosses', async (t) => {
  const { jobs, received } = await clientOfRecordingServer(t);
  await t.throwsAsync(jobs.finish({ type: 't1', id: 'j1' } as unknown as Job), { code: 'invalid_option' });
  const [outcome] = await jobs.completeMany([{ job: null as unknown as Job }]);
  t.is(outcome?.status, 'rejected');
  t.is(received.size, 0);
});
