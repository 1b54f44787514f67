// A bug the chaos run found in the jobs application (its worker_gone and
// not_finished anomalies after a kill of core or user_sup): when user_sup is
// restarted (killed, or restarted with core by rest_for_one) it comes back
// without the children added to it at run time, so every actor started with
// `app.system.startActor` and every `app.process` scheduler is gone for good,
// and the jobs of a processed type are never run again.
// Fixed: the app keeps the specs of the children it started and gives them to every new user_sup.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { startJobs } from 'jobtree';
import chaosHandler from './fixtures/chaos-handler.js';
import chaosWorker from './fixtures/chaos-worker.js';

for (const victim of ['user_sup', 'core']) {
  test(`after ${victim} is killed, the actors and processors started under user_sup run again`, async (t) => {
    t.timeout(60_000);
    const dir = await mkdtemp(join(tmpdir(), 'jobtree-chaos-usersup-'));
    const app = await startJobs({ path: dir, threads: 2 });
    t.teardown(async () => {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    });
    await app.setTypeTimeout('handled', 3);
    await app.setTypeTimeout('worked', 3);
    await app.process('handled', chaosHandler, { maxJobs: 4, threads: 1 });
    const args = { type: 'worked', name: 'worker-0', historyPath: join(dir, 'history.jsonl'), seed: 1, maxUpdates: 1, maxStepMs: 10 };
    await app.system.startActor('worker-0', chaosWorker, args, { name: 'worker-0' });
    const before = app.system.whereis('user_sup');
    await app.system.kill(victim);
    const deadline = Date.now() + 20_000;
    const back = () => app.system.whereis('user_sup') !== before && app.system.whereis('processor:handled') !== undefined && app.system.whereis('worker-0') !== undefined;
    while (!back() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    t.not(app.system.whereis('processor:handled'), undefined, 'the processor runs again');
    t.not(app.system.whereis('worker-0'), undefined, 'the worker actor runs again');
    await app.add('handled', 'after', {});
    const sub = await app.subscribe('handled', 'after');
    t.like(await app.wait(sub, 'finished', 20_000), { state: 'finished' });
  });
}
