// The jobs application end to end: `startJobs` on the embedded store, jobs
// processed by supervised worker actors, live events from subscriptions,
// fault injection (an activity monitor and notifier_sup killed mid-run: what
// restarts and what keeps running), a worker that goes silent
// and whose job the activity monitor re-enqueues, and a closing summary.
//
//   pnpm demo                                   (a temp dir, removed afterwards)
//   pnpm exec tsx examples/app-demo.ts --path ./.data/demo

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type JobsApp, type Subscription, type TreeNode, formatTree, startJobs } from 'jobtree';
import emailWorker from './actors/email-worker.js';

const { values } = parseArgs({ options: { path: { type: 'string' } } });
const temporary = values.path === undefined;
const path = values.path ?? mkdtempSync(join(tmpdir(), 'jobtree-app-demo-'));
const step = (title: string) => console.log(`\n== ${title}`);
const TYPE = 'email';
const JOBS = 12;

/** name -> actor id, for every place in the tree. */
function places(node: TreeNode, into = new Map<string, string | undefined>()): Map<string, string | undefined> {
  into.set(node.name, node.id);
  for (const child of node.children) places(child, into);
  return into;
}

function showRestarts(before: Map<string, string | undefined>, app: JobsApp): void {
  const after = places(app.system.tree());
  const moved = [...after].filter(([name, id]) => before.get(name) !== id).map(([name]) => name);
  const kept = [...after].filter(([name, id]) => before.get(name) === id).map(([name]) => name);
  console.log(`  restarted: ${moved.join(', ') || 'nothing'}`);
  console.log(`  kept running: ${kept.join(', ')}`);
}

async function settle(app: JobsApp, name: string, previous: string | undefined): Promise<void> {
  let stop: string | undefined;
  void app.stopped.then((how) => {
    stop = how.message;
  });
  while (app.system.whereis(name) === undefined || app.system.whereis(name) === previous) {
    if (stop !== undefined) throw new Error(`the app stopped while ${name} restarted: ${stop}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const app = await startJobs({ path, typeMonitorHoldoffMs: 20, logLevel: 'silent' });
console.log(`started the jobs app on the embedded store in ${path}`);
let eventsSeen = 0;
try {
  step('1. the tree: a type timeout starts its activity monitor and notifier');
  await app.setTypeTimeout(TYPE, 2);
  console.log(formatTree(app.system.tree()).replace(/^/gm, '  '));

  step(`2. ${JOBS} jobs, subscriptions to three of them, and three worker actors under user_sup`);
  for (let i = 1; i <= JOBS; i++) await app.add(TYPE, `welcome-${i}`, { to: `user${i}@example.com` });
  const watched: Subscription[] = [];
  for (const id of ['welcome-1', 'welcome-6', 'welcome-12']) watched.push(await app.subscribe(TYPE, id));
  const printing = Promise.all(
    watched.map(async (sub) => {
      for await (const event of sub) {
        eventsSeen += 1;
        console.log(`  event ${event.id}: ${event.state} ${JSON.stringify(event.data)}`);
      }
    }),
  );
  for (let i = 1; i <= 3; i++) await app.system.startActor(`worker-${i}`, emailWorker, { type: TYPE, workMs: 150 });

  step('3. fault injection while they work');
  // Each kill costs the root one of its 3 restarts per 10 s (a per-type
  // actor's exit stops jobs_server, as in couch_jobs): two kills leave it
  // one for anything else that fails meanwhile, on a loaded machine.
  for (const name of [`activity_monitor:${TYPE}`, 'notifier_sup']) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    const before = places(app.system.tree());
    console.log(`  kill ${name}`);
    await app.system.kill(name);
    await settle(app, `notifier:${TYPE}`, before.get(`notifier:${TYPE}`));
    await settle(app, `activity_monitor:${TYPE}`, before.get(`activity_monitor:${TYPE}`));
    showRestarts(before, app);
  }
  await printing;
  while ((await app.pendingCount(TYPE)) > 0 || (await app.getActiveJobIds(TYPE)).length > 0) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(`  all ${JOBS} jobs finished: ${(await app.getJobs(TYPE)).every((job) => job.state === 'finished')}`);

  step('4. a worker goes silent: the activity monitor re-enqueues its job after a whole timeout (2 s)');
  for (let i = 1; i <= 3; i++) await app.system.stopChild(`worker-${i}`);
  await app.add(TYPE, 'stuck-1', { to: 'late@example.com' });
  const stuck = await app.subscribe(TYPE, 'stuck-1');
  await app.system.startActor('silent-worker', emailWorker, { type: TYPE, workMs: 150, silent: true });
  const taken = Date.now();
  const running = await app.wait(stuck, 'running', 10_000);
  console.log(`  ${running === 'timeout' ? 'timeout' : `stuck-1 is ${running.state}`} (taken by the silent worker)`);
  const pending = await app.wait(stuck, 'pending', 15_000);
  console.log(`  ${pending === 'timeout' ? 'timeout' : `stuck-1 is ${pending.state} again`} after ${((Date.now() - taken) / 1000).toFixed(1)} s`);
  await app.system.startActor('rescuer', emailWorker, { type: TYPE, workMs: 60 });
  const done = await app.wait(stuck, 'finished', 15_000);
  console.log(`  ${done === 'timeout' ? 'timeout' : `stuck-1 is ${done.state}: ${JSON.stringify(done.data)}`}`);

  step('5. summary');
  const tree = app.system.tree();
  const restarts = (node: TreeNode): number => node.restarts + node.children.reduce((sum, child) => sum + restarts(child), 0);
  const jobs = await app.getJobs(TYPE);
  console.log(`  jobs: ${jobs.filter((job) => job.state === 'finished').length} finished of ${jobs.length}`);
  console.log(`  events delivered to the three subscriptions: ${eventsSeen}`);
  console.log(`  restarts in the tree: ${restarts(tree)}; threads: ${app.system.threads().length}`);
  console.log(formatTree(tree).replace(/^/gm, '  '));
} finally {
  await app.close();
  if (temporary) rmSync(path, { recursive: true, force: true });
}
console.log('closed');
