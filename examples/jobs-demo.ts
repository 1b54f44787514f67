// A tour of jobtree's jobs API without actors: a type timeout, jobs with
// priorities and scheduled times, two workers that accept, update and
// finish them, a resubmission, a blocked accept woken by a new job, and a
// worker that went silent being re-enqueued (its late finish gets `halt`),
// and many jobs drained by workers sharing a LocalQueue (batched accepts).
//
//   pnpm exec tsx examples/jobs-demo.ts                       (a temp dir, removed afterwards)
//   pnpm exec tsx examples/jobs-demo.ts --path ./.data/demo   keep the data afterwards

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { JobsError, LocalQueue, openJobs } from '@jobtree/core';
import type { Job, Jobs } from '@jobtree/core';

const { values } = parseArgs({ options: { path: { type: 'string' } } });
const temporary = values.path === undefined;
const path = values.path ?? mkdtempSync(join(tmpdir(), 'jobtree-jobs-demo-'));
const step = (title: string) => console.log(`\n== ${title}`);
const now = () => Date.now() / 1000;

async function showJobs(jobs: Jobs, type: string): Promise<void> {
  for (const job of await jobs.getJobs(type)) {
    const due = job.scheduledTime > now() ? `due in ${(job.scheduledTime - now()).toFixed(1)} s` : 'due';
    console.log(`  ${job.id.padEnd(10)} ${job.state.padEnd(8)} priority ${job.priority}  ${due}  data ${JSON.stringify(job.data)}`);
  }
}

const jobs = await openJobs({ path });
console.log(`opened jobs on the embedded database in ${path}`);

try {
  step('1. a type needs an activity timeout before jobs can be added');
  try {
    await jobs.add('thumbnail', 'cat.jpg', { size: 128 });
  } catch (error) {
    if (!JobsError.is(error)) throw error;
    console.log(`  add without a timeout -> JobsError ${error.code}`);
  }
  await jobs.setTypeTimeout('thumbnail', 30);
  console.log(`  setTypeTimeout('thumbnail', 30) -> types: ${JSON.stringify(await jobs.getTypes())}`);

  step('2. add jobs: higher priority runs first, then the older scheduled time');
  await jobs.add('thumbnail', 'cat.jpg', { size: 128 });
  await jobs.add('thumbnail', 'dog.jpg', { size: 256 }, { priority: 5 });
  await jobs.add('thumbnail', 'owl.jpg', { size: 64 }, { priority: 1 });
  const addedBy = now();
  await jobs.add('thumbnail', 'later.jpg', { size: 32 }, { scheduledTime: addedBy + 1.5, priority: 9 });
  await showJobs(jobs, 'thumbnail');
  console.log(`  pending: ${await jobs.pendingCount('thumbnail')}, due now: ${await jobs.pendingCount('thumbnail', { maxSchedTime: now() })}`);

  step('3. two workers accept (each job goes to exactly one), report progress and finish');
  // maxSchedTime: the jobs due when the first three were added, so that later.jpg is left for step 4 however long this step takes.
  const worker = async (name: string): Promise<string[]> => {
    const done: string[] = [];
    for (let job = await jobs.accept('thumbnail', { maxSchedTime: addedBy }); job; job = await jobs.accept('thumbnail', { maxSchedTime: addedBy })) {
      console.log(`  ${name} accepted ${job.id} (priority ${job.priority})`);
      const progressed = await jobs.update(job, { ...(job.data as object), progress: 0.5 });
      await jobs.finish(progressed, { ...(job.data as object), url: `https://cdn.example/${job.id}` });
      done.push(job.id);
    }
    return done;
  };
  const [a, b] = await Promise.all([worker('worker A'), worker('worker B')]);
  console.log(`  A finished ${JSON.stringify(a)}, B finished ${JSON.stringify(b)}; later.jpg was not due when they started`);
  await showJobs(jobs, 'thumbnail');

  step('4. a blocked accept waits (no polling) until the scheduled job is due');
  const started = Date.now();
  const later = await jobs.accept('thumbnail', { timeout: 5_000 });
  console.log(`  accepted ${later?.id} after ${Date.now() - started} ms`);

  step('5. resubmit: the running job is flagged, and finish enqueues it again');
  await jobs.resubmit(later!, { scheduledTime: now() });
  console.log(`  finish -> ${await jobs.finish(later!)}; state now ${await jobs.getJobState('thumbnail', 'later.jpg')}`);
  const again = (await jobs.accept('thumbnail'))!;
  console.log(`  accepted ${again.id} again; finish -> ${await jobs.finish(again)}`);

  step('6. a worker that goes silent is re-enqueued; its late finish is refused with halt');
  await jobs.add('thumbnail', 'slow.jpg', { size: 1024 });
  const silent: Job = (await jobs.accept('thumbnail'))!;
  const stamp = (await jobs.getActivityVersionstamp('thumbnail'))!;
  console.log(`  activity versionstamp ${stamp}; running: ${JSON.stringify(await jobs.getActiveJobIds('thumbnail'))}`);
  // The activity monitor does this one timeout after recording the stamp.
  console.log(`  reEnqueueInactive -> ${JSON.stringify(await jobs.reEnqueueInactive('thumbnail', stamp))}`);
  try {
    await jobs.finish(silent);
  } catch (error) {
    if (!JobsError.is(error, 'halt')) throw error;
    console.log(`  the silent worker's finish -> JobsError ${error.code}`);
  }
  const rescued = (await jobs.accept('thumbnail'))!;
  await jobs.finish(rescued, { size: 1024, url: 'https://cdn.example/slow.jpg' });
  console.log(`  another worker took it over and finished it`);
  await showJobs(jobs, 'thumbnail');

  step('7. remove');
  console.log(`  remove cat.jpg -> ${await jobs.remove('thumbnail', 'cat.jpg')}, again -> ${await jobs.remove('thumbnail', 'cat.jpg')}`);

  step('8. many jobs, four workers sharing a local queue (one accept transaction per batch)');
  await jobs.setTypeTimeout('resize', 30);
  await jobs.addMany('resize', Array.from({ length: 2_000 }, (_, i) => ({ id: `img-${i}`, data: { width: 64 + (i % 8) * 32 } })));
  const queue = new LocalQueue(jobs, 'resize', { size: 200 });
  const drainStart = performance.now();
  let done = 0;
  const queueWorker = async () => {
    for (let job = await queue.take(); job !== undefined; job = await queue.take()) {
      await queue.finish(job, { width: (job.data as { width: number }).width, resized: true });
      if (++done === 2_000) void queue.stop(); // all done: the waiting workers get undefined
    }
  };
  await Promise.all([queueWorker(), queueWorker(), queueWorker(), queueWorker()]);
  const seconds = (performance.now() - drainStart) / 1000;
  console.log(`  4 workers finished ${done} jobs in ${seconds.toFixed(2)} s; pending left: ${await jobs.pendingCount('resize')}`);
} finally {
  await jobs.close();
  if (temporary) rmSync(path, { recursive: true, force: true });
}
console.log('\nclosed');
