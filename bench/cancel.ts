// Benchmark of prompt cancellation, run by `pnpm bench:cancel [--tries N]`:
// how long after `app.cancel` (or `app.remove`) of a running job its
// handler's signal is aborted, p50 and p99 over 200 tries (every other try
// a remove), with the handler
//
// 1. in the same process as the app that cancels (bound: 100 ms), and
// 2. in another process, a client of that app's store (bound: the
//    notifier's holdoff, the app's `typeMonitorHoldoffMs`, plus 100 ms).
//
// The type's activity timeout is 300 s, so a heartbeat (every 100 s) never
// aborts a run here: every abort measured is the scheduler's cancellation
// watch. A try starts once the handler runs (it writes a file); the clock
// starts just before the cancel call, which includes its durable commit,
// and stops when the handler sees the abort (it writes the time, read from
// the system clock with sub-millisecond precision, comparable across
// processes). Every process it starts is stopped and its data removed.

import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type JobsApp, startJobs } from 'jobtree';
import handler from './cancel-fixtures/aborted-at.js';
import type { CancelChildReady } from './cancel-fixtures/cancel-child.js';
import { formatTable } from './table.js';
import { benchOptions, positiveInteger } from './bench-options.js';

const USAGE = `usage: pnpm bench:cancel [--tries N]
  --tries N        cancellations measured per placement of the handler (default 200; every other one a remove)`;
const args = benchOptions(USAGE, { tries: { type: 'string', default: '200' } });
const TRIES = positiveInteger(USAGE, '--tries', args.tries);
const TYPE = 'cancel-bench';
/** A heartbeat every 100 s: none comes during a try. */
const TYPE_TIMEOUT_SECONDS = 300;
/** The app's default `typeMonitorHoldoffMs`: at most one notification per type per this many ms. */
const HOLDOFF_MS = 50;
const CHILD = fileURLToPath(new URL('./cancel-fixtures/cancel-child.ts', import.meta.url));

interface Run {
  p50: number;
  p99: number;
  /** Tries whose handler saw a cause other than `cancel`. */
  wrongCause: number;
}

const now = (): number => performance.timeOrigin + performance.now();

async function waitForFile(path: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Runs the tries on `app`, whose store's processor of TYPE runs the aborted-at handler; `dir` is where the handler writes. */
async function tries(app: JobsApp, dir: string, label: string): Promise<Run> {
  const samples: number[] = [];
  let wrongCause = 0;
  for (let index = 0; index < TRIES; index++) {
    const id = `${label}-${index}`;
    await app.add(TYPE, id, { dir });
    await waitForFile(join(dir, `${id}.running`));
    const cancelledAt = now();
    if (index % 2 === 0) await app.cancel(TYPE, id);
    else await app.remove(TYPE, id);
    await waitForFile(join(dir, id));
    const { abortedAt, cause } = JSON.parse(readFileSync(join(dir, id), 'utf8')) as { abortedAt: number; cause: string };
    samples.push(abortedAt - cancelledAt);
    if (cause !== 'cancel') wrongCause++;
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), wrongCause };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function sameProcess(): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-cancel-'));
  const app = await startJobs({ path: join(dir, 'db'), threads: 1, logLevel: 'warn' });
  try {
    await app.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
    await app.process(TYPE, handler, { threads: 1, maxJobs: 4 });
    return await tries(app, dir, 'same');
  } finally {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function otherProcess(): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-cancel-'));
  const path = join(dir, 'db');
  const app = await startJobs({ path, threads: 1, logLevel: 'warn' });
  let child: ChildProcess | undefined;
  try {
    await app.setTypeTimeout(TYPE, TYPE_TIMEOUT_SECONDS);
    child = fork(CHILD, ['--path', path, '--type', TYPE], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const ready = await new Promise<CancelChildReady>((resolve, reject) => {
      child?.once('message', (message) => resolve(message as CancelChildReady));
      child?.once('exit', (code) => reject(new Error(`the worker process exited (${code}) before it was ready`)));
    });
    if (ready.role !== 'client') throw new Error(`the worker process is the store's ${ready.role}, not a client`);
    return await tries(app, dir, 'other');
  } finally {
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.send('stop');
      await exited;
    }
    await app.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const same = await sameProcess();
const other = await otherProcess();
const row = (name: string, run: Run, bound: number): (string | number)[] => [
  name,
  run.p50,
  run.p99,
  HOLDOFF_MS,
  bound,
  run.p99 <= bound && run.wrongCause === 0 ? 'pass' : 'FAIL',
];
console.log(`cancel or remove -> handler's signal aborted (cause cancel), ${TRIES} tries each, heartbeat 100 s away`);
console.log();
console.log(
  formatTable(
    ['handler runs in', 'p50 ms', 'p99 ms', 'notifier holdoff ms', 'bound ms', 'result'],
    [row('the same process', same, 100), row('another process (a client of the store)', other, HOLDOFF_MS + 100)],
  ),
);
if (same.wrongCause + other.wrongCause > 0) console.log(`\naborts with a cause other than cancel: ${same.wrongCause + other.wrongCause}`);
if (same.p99 > 100 || other.p99 > HOLDOFF_MS + 100 || same.wrongCause + other.wrongCause > 0) process.exitCode = 1;
