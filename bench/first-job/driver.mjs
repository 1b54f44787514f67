// Run by bench/first-job.ts in a child process, from the workspace's
// sources (under tsx) or from an app with the packed tarballs installed
// (plain node): per round, a fresh store with one job waiting, and
//   - app.process, in handler threads (a module) and on the main thread (a
//     function): process() called -> resolved, and resolved -> the job finished;
//   - the LocalQueue path: the queue made -> the job taken and finished;
// then, once, an app with no processors against the same app with
// processors of 100 types: its threads and resident memory.
//
//   node [--import tsx] driver.mjs DATA_DIR ROUNDS
//
// Prints one JSON line.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalQueue, openJobs, startJobs } from 'jobtree';
import noop from './noop-handler.mjs';

const [dataDir, roundsArg] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: node driver.mjs DATA_DIR ROUNDS');
const rounds = Number(roundsArg ?? '5');

/** The process's OS threads (Linux), else undefined. */
function osThreads() {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('Threads:'));
    return line === undefined ? undefined : Number(line.split(/\s+/)[1]);
  } catch {
    return undefined;
  }
}

/** A no-op handler function: it runs on the main thread. */
const noopOnMain = async () => null;

async function appProcessRound(round, handler) {
  const app = await startJobs({ path: join(dataDir, `process-${handler === noop ? 'threads' : 'main'}-${round}`), logLevel: 'silent' });
  try {
    await app.setTypeTimeout('noop', 30);
    await app.add('noop', 'first', {});
    const called = performance.now();
    await app.process('noop', handler);
    const ready = performance.now();
    const scheduler = app.scheduler.of('noop');
    await new Promise((resolve) => {
      scheduler.events.on('job:finished', (event) => event.id === 'first' && resolve());
    });
    return { processMs: ready - called, firstJobMs: performance.now() - ready };
  } finally {
    await app.close();
  }
}

async function localQueueRound(round) {
  const jobs = await openJobs({ path: join(dataDir, `queue-${round}`) });
  try {
    await jobs.setTypeTimeout('noop', 30);
    await jobs.add('noop', 'first', {});
    const started = performance.now();
    const queue = new LocalQueue(jobs, 'noop', { size: 1 });
    const job = await queue.take();
    await queue.finish(job, null);
    const firstJobMs = performance.now() - started;
    await queue.stop();
    return { firstJobMs };
  } finally {
    await jobs.close();
  }
}

async function hundredTypes() {
  const app = await startJobs({ path: join(dataDir, 'types'), logLevel: 'silent' });
  try {
    const types = Array.from({ length: 100 }, (_, i) => `kind-${i}`);
    for (const type of types) await app.jobs.setTypeTimeout(type, 30);
    await app.system.call('jobs_server', { type: 'check_types' }, 60_000);
    const none = { threads: osThreads(), rssMb: process.memoryUsage().rss / 2 ** 20 };
    for (const type of types) await app.process(type, noop);
    // Every type runs a job, so each has loaded its module and run through its lane.
    await Promise.all(
      types.map(async (type) => {
        const finished = new Promise((resolve) => app.scheduler.of(type).events.on('job:finished', () => resolve()));
        await app.add(type, 'one', {});
        await finished;
      }),
    );
    const handlerThreads = new Set(types.flatMap((type) => app.scheduler.of(type).threads.map((worker) => worker.threadId))).size;
    const all = { threads: osThreads(), rssMb: process.memoryUsage().rss / 2 ** 20, handlerThreads };
    return { none, all };
  } finally {
    await app.close();
  }
}

const process_ = [];
const processMain = [];
const queue = [];
for (let round = 0; round < rounds; round++) {
  process_.push(await appProcessRound(round, noop));
  processMain.push(await appProcessRound(round, noopOnMain));
  queue.push(await localQueueRound(round));
}
const types = await hundredTypes();
console.log(JSON.stringify({ process: process_, processMain, queue, types }));
