// A bug the chaos run found in the jobs application (seed 20261122 of
// `pnpm test:chaos --faults 1000`): `app.subscribe` made while the type's
// notifier is being killed rejects with the actor runtime's call error
// (`ActorError` code `killed` or `noproc`) instead of subscribing with the
// notifier's successor, or failing with a JobsError. Two rounds only: each
// kill of a notifier costs a restart of jobs_server, and the root allows 3
// in 10 s. Fixed: the subscribe asks the successor, within resubscribeTimeoutMs.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { JobsError } from '@jobtree/core';
import { startJobs } from 'jobtree';

const T = 'subs';

test('a subscribe racing with a kill of the notifier resolves, or rejects with a JobsError', async (t) => {
  t.timeout(60_000);
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-chaos-sub-'));
  const app = await startJobs({ path: dir, threads: 2, typeMonitorHoldoffMs: 0 });
  t.teardown(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });
  await app.setTypeTimeout(T, 5);
  const untyped: string[] = [];
  for (let i = 0; i < 2; i++) {
    await app.add(T, `j${i}`, {});
    const subscribing = app.subscribe(T, `j${i}`).then(
      () => undefined,
      (error: unknown) => (error instanceof JobsError ? undefined : `${(error as { code?: string }).code ?? (error as Error).name}: ${(error as Error).message}`),
    );
    await app.system.kill(`notifier:${T}`);
    const problem = await subscribing;
    if (problem !== undefined) untyped.push(problem);
    // The next round needs the successor.
    while (app.system.whereis(`notifier:${T}`) === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.deepEqual(untyped, []);
});
