// The jobs application's own figures, from one run:
// - finish() -> subscriber event latency, p50/p99, with type monitor holdoff
//   0 and 50 ms (target at holdoff 0: p50 <= 1 ms), against the latency of a
//   bare cross-thread round trip measured in the same run;
// - how long a silent worker's job takes to be pending again, as a multiple
//   of the type timeout (target <= 2);
// - host threads and RSS with 1, 100 and 1,000 job types (target: threads <=
//   cores + 2 whatever the number of types).
//
//   pnpm bench:app [--quick]

import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { type JobsApp, type StartJobsOptions, startJobs } from 'jobtree';
import { type Cell, formatTable } from './table.js';
import { benchOptions } from './bench-options.js';

const USAGE = `usage: pnpm bench:app [--quick]
  --quick          100 latency samples, 1, 100 and 300 types: a short run`;
const quick = benchOptions(USAGE, { quick: { type: 'boolean', default: false } }).quick === true;
const SAMPLES = quick ? 100 : 400;
const TYPES = quick ? [1, 100, 300] : [1, 100, 1_000];

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function withApp<T>(options: Partial<StartJobsOptions>, body: (app: JobsApp) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-app-'));
  const app = await startJobs({ path: dir, ...options } as StartJobsOptions);
  try {
    return await body(app);
  } finally {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** finish() resolved -> the subscriber's finished event, in ms, one job at a time. */
async function finishToEvent(holdoffMs: number): Promise<number[]> {
  return withApp({ typeMonitorHoldoffMs: holdoffMs, threads: 2 }, async (app) => {
    await app.setTypeTimeout('bench', 30);
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES + 10; i++) {
      const id = `job-${i}`;
      await app.add('bench', id, {});
      const sub = await app.subscribe('bench', id);
      const job = await app.accept('bench');
      await app.wait(sub, 'running', 10_000);
      // Spread samples over the holdoff window, as real finishes would be.
      if (holdoffMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * holdoffMs));
      await app.finish(job!);
      const finished = performance.now();
      const event = await app.wait(sub, 'finished', 10_000);
      if (event === 'timeout') throw new Error('no finished event');
      if (i >= 10) samples.push(performance.now() - finished);
      process.stdout.write(i % 50 === 0 ? '.' : '');
    }
    return samples;
  });
}

/** A bare round trip to a worker thread and back, in ms: the floor under any cross-thread event. */
async function roundTrip(): Promise<number[]> {
  const worker = new Worker('const { parentPort } = require("node:worker_threads"); parentPort.on("message", (port) => port.on("message", (m) => port.postMessage(m)));', { eval: true });
  const { port1, port2 } = new MessageChannel();
  worker.postMessage(port2, [port2]);
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES + 10; i++) {
    const start = performance.now();
    await new Promise<void>((resolve) => {
      port1.once('message', () => resolve());
      port1.postMessage(i);
    });
    // Let the worker fall asleep, as the notifier's thread does between events.
    await new Promise((resolve) => setTimeout(resolve, 2));
    if (i >= 10) samples.push(performance.now() - start);
  }
  port1.close();
  await worker.terminate();
  return samples;
}

/** Time for a silent worker's job to be pending again, in units of the type timeout. */
async function reEnqueueDelay(timeoutSeconds: number, rounds: number): Promise<number[]> {
  return withApp({ threads: 2 }, async (app) => {
    await app.setTypeTimeout('silent', timeoutSeconds);
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const id = `silent-${round}`;
      await app.add('silent', id, {});
      const sub = await app.subscribe('silent', id);
      await app.accept('silent');
      const silentSince = performance.now();
      const event = await app.wait(sub, 'pending', timeoutSeconds * 4_000);
      if (event === 'timeout') throw new Error('the silent job was not re-enqueued');
      ratios.push((performance.now() - silentSince) / (timeoutSeconds * 1000));
      await app.remove('silent', id);
      process.stdout.write('.');
    }
    return ratios;
  });
}

/** Host threads and RSS with `count` types, each with its activity monitor, notifier and type monitor. */
async function footprint(count: number): Promise<{ threads: number; rssMiB: number; actors: number }> {
  return withApp({}, async (app) => {
    for (let i = 0; i < count; i++) await app.jobs.setTypeTimeout(`type-${i}`, 60);
    await app.system.call('jobs_server', { type: 'check_types' }, 600_000);
    const actors = app.system.tree().children.reduce((sum, node) => sum + node.children.length, 0);
    return { threads: app.system.threads().length, rssMiB: process.memoryUsage().rss / 2 ** 20, actors };
  });
}

const rows: Cell[][] = [];
console.log(`jobtree app bench (${quick ? 'quick' : 'full'}), ${availableParallelism()} cores`);

process.stdout.write('cross-thread round trip ');
const trip = await roundTrip();
console.log();
rows.push(['bare round trip to a sleeping thread p50 / p99 (ms)', `${percentile(trip, 50).toFixed(3)} / ${percentile(trip, 99).toFixed(3)}`, '-', 'baseline']);
for (const holdoff of [0, 50]) {
  process.stdout.write(`finish -> event, holdoff ${holdoff} ms `);
  const samples = await finishToEvent(holdoff);
  console.log();
  const p50 = percentile(samples, 50);
  const target = holdoff === 0 ? 'p50 <= 1 ms' : '-';
  const result = holdoff === 0 ? (p50 <= 1 ? 'pass' : 'FAIL') : 'info';
  rows.push([`finish -> subscriber event, holdoff ${holdoff} ms, p50 / p99 (ms)`, `${p50.toFixed(3)} / ${percentile(samples, 99).toFixed(3)}`, target, result]);
  rows.push([`  as a multiple of the bare round trip p50`, (p50 / percentile(trip, 50)).toFixed(2), '-', 'info']);
}

process.stdout.write('silent worker re-enqueue ');
const delays = await reEnqueueDelay(1, quick ? 3 : 6);
console.log();
const worst = Math.max(...delays);
rows.push(['silent job pending again / type timeout, mean (max)', `${(delays.reduce((a, b) => a + b, 0) / delays.length).toFixed(2)} (${worst.toFixed(2)})`, '<= 2', worst <= 2 ? 'pass' : 'FAIL']);

const limit = availableParallelism() + 2;
for (const count of TYPES) {
  process.stdout.write(`footprint with ${count} types `);
  const { threads, rssMiB, actors } = await footprint(count);
  console.log();
  rows.push([`${count} types: host threads (per-type actors ${actors}), RSS MiB ${rssMiB.toFixed(0)}`, threads, `<= ${limit}`, threads <= limit ? 'pass' : 'FAIL']);
}

console.log();
console.log(formatTable(['metric', 'value', 'target', 'result'], rows));
