// Benchmark of limits per job type, run by `pnpm bench:limits`.
//
// 1. Rate: a type limited to 500 starts per second (`--rate`), with a
//    backlog larger than the run can drain, taken by 4 concurrent takers
//    (acceptMany of 100, finishMany). Reports the starts per second over the
//    run (whole windows) and the deviation from the limit (target: within
//    5%), the fewest and most starts counted in one epoch-aligned window (by
//    the time each take returned), and the most starts that surely fell in
//    one window of 1 s, wherever it lies (the takes asked and returned
//    within it; the limit holds in every window: at most the rate). The run lasts
//    `--seconds` (default 5; 60, the target's minute, with `--seconds 60`
//    or LIMITS_BENCH_SECONDS=60).
// 2. Take-path cost with no limit set: drain N jobs (acceptMany of 100,
//    finishMany) and report CPU seconds per 10,000 jobs (user + system,
//    every thread of the process). With `--compare DIR` the drain runs in
//    child processes, 3 rounds interleaved, against this checkout's
//    packages/core/src and DIR's (another checkout, without limits), and
//    the ratio of their medians is reported (target: <= 1.10).
//    `--cost-only` runs only this part (in this process).

import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchOptions, positiveInteger } from './bench-options.js';

const USAGE = `usage: pnpm bench:limits [--seconds N] [--rate N] [--jobs N] [--compare DIR] [--core DIR] [--cost-only]
  --seconds N      how long the rate run lasts, whole 1 s windows (default 5, or LIMITS_BENCH_SECONDS)
  --rate N         the type's limit, starts per second, a whole number (default 500)
  --jobs N         jobs of the take-path cost drain (default 20000)
  --compare DIR    the cost drain in child processes, 3 rounds interleaved, against DIR's packages/core/src
  --core DIR       run against another checkout's packages/core/src
  --cost-only      only the take-path cost drain`;
const args = benchOptions(USAGE, {
  seconds: { type: 'string' },
  rate: { type: 'string', default: '500' },
  jobs: { type: 'string', default: '20000' },
  compare: { type: 'string' },
  core: { type: 'string' },
  'cost-only': { type: 'boolean', default: false },
});
// Whole numbers: the run counts whole windows of 1 s, and a rate limit's max is a whole number of starts.
const seconds = positiveInteger(USAGE, '--seconds', args.seconds ?? process.env.LIMITS_BENCH_SECONDS ?? '5');
const rate = positiveInteger(USAGE, '--rate', args.rate);
const drainJobs = positiveInteger(USAGE, '--jobs', args.jobs);
const HERE = fileURLToPath(new URL('.', import.meta.url));
const TYPE = 'bench';

interface CoreModule {
  openDatabase(options: { path: string }): Promise<{ close(): Promise<void> }>;
  openJobs(options: { database: unknown }): Promise<BenchJobs>;
}

interface BenchJob {
  id: string;
}

interface BenchJobs {
  setTypeTimeout(type: string, seconds: number): Promise<void>;
  setTypeLimits?(type: string, limits: { rate: { max: number; perMs: number } }): Promise<void>;
  addMany(type: string, jobs: { id: string }[]): Promise<unknown>;
  acceptMany(type: string, count: number, options: { timeout: number }): Promise<BenchJob[]>;
  finishMany(jobs: BenchJob[]): Promise<unknown>;
  close(): Promise<void>;
}

async function loadCore(dir: string | undefined): Promise<CoreModule> {
  const path = resolve(dir ?? join(HERE, '../packages/core/src'), 'index.ts');
  return (await import(pathToFileURL(path).href)) as CoreModule;
}

async function withStore<T>(core: CoreModule, body: (jobs: BenchJobs) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-limits-'));
  const database = await core.openDatabase({ path: dir });
  const jobs = await core.openJobs({ database });
  try {
    await jobs.setTypeTimeout(TYPE, 60);
    return await body(jobs);
  } finally {
    await jobs.close();
    await database.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function addBacklog(jobs: BenchJobs, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1_000) {
    const size = Math.min(1_000, count - start);
    await jobs.addMany(TYPE, Array.from({ length: size }, (_, i) => ({ id: `j${start + i}` })));
  }
}

async function rateRun(core: CoreModule): Promise<void> {
  await withStore(core, async (jobs) => {
    if (jobs.setTypeLimits === undefined) throw new Error('this core has no setTypeLimits');
    await jobs.setTypeLimits(TYPE, { rate: { max: rate, perMs: 1_000 } });
    await addBacklog(jobs, Math.ceil(rate * (seconds + 2) * 1.2));
    // The run starts on a window's start and lasts whole windows: the rate
    // is the starts of the run over its length. A take that ends just past
    // a boundary counts in the next window's tally (the fewest and most per
    // window show it), which moves no start in or out of the run but the last.
    await new Promise((wake) => setTimeout(wake, 1_000 - (Date.now() % 1_000)));
    const firstWindow = Math.floor(Date.now() / 1_000);
    const endAt = (firstWindow + seconds) * 1_000;
    const perWindow = new Map<number, number>();
    /** Each take: when it was asked, when it returned, how many it started. */
    const takes: { asked: number; returned: number; count: number }[] = [];
    const taker = async () => {
      while (Date.now() < endAt) {
        const asked = Date.now();
        const batch = await jobs.acceptMany(TYPE, 100, { timeout: Math.max(1, endAt - Date.now()) });
        if (batch.length === 0) continue;
        takes.push({ asked, returned: Date.now(), count: batch.length });
        const window = Math.floor(Date.now() / 1_000);
        perWindow.set(window, (perWindow.get(window) ?? 0) + batch.length);
        await jobs.finishMany(batch);
      }
    };
    await Promise.all([taker(), taker(), taker(), taker()]);
    const windows = Array.from({ length: seconds }, (_, i) => firstWindow + i);
    const counts = windows.map((window) => perWindow.get(window) ?? 0);
    const total = counts.reduce((sum, count) => sum + count, 0);
    const achieved = total / seconds;
    const deviation = ((achieved - rate) / rate) * 100;
    console.log(`rate limit ${rate}/s, ${seconds} s under a backlog, ${seconds} windows of 1 s`);
    console.log(`  achieved ${achieved.toFixed(1)} starts/s (${deviation >= 0 ? '+' : ''}${deviation.toFixed(2)}%; target within ±5%)`);
    console.log(`  fewest ${Math.min(...counts)}, most ${Math.max(...counts)} starts counted in one epoch-aligned window (by return time)`);
    console.log(`  most starts surely within one window of 1 s, wherever it lies: ${surelyInOneWindow(takes, 1_000)}`);
  });
}

/** The most starts of takes that were asked and returned within one window of `ms`, over windows that begin as a take is asked. */
function surelyInOneWindow(takes: { asked: number; returned: number; count: number }[], ms: number): number {
  let most = 0;
  for (const first of takes) {
    let sum = 0;
    for (const each of takes) if (each.asked >= first.asked && each.returned < first.asked + ms) sum += each.count;
    most = Math.max(most, sum);
  }
  return most;
}

/** CPU seconds per 10,000 jobs drained with no limit set. */
async function drainCost(core: CoreModule): Promise<number> {
  return withStore(core, async (jobs) => {
    await addBacklog(jobs, drainJobs);
    const before = process.cpuUsage();
    for (;;) {
      const batch = await jobs.acceptMany(TYPE, 100, { timeout: 0 });
      if (batch.length === 0) break;
      await jobs.finishMany(batch);
    }
    const used = process.cpuUsage(before);
    return ((used.user + used.system) / 1e6) * (10_000 / drainJobs);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function costInChild(coreDir: string): number {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--cost-only', '--jobs', String(drainJobs), '--core', coreDir], {
    encoding: 'utf8',
  });
  const line = child.stdout.split('\n').find((each) => each.startsWith('cost '));
  if (line === undefined) throw new Error(`the drain in ${coreDir} reported nothing:\n${child.stderr}`);
  return Number(line.split(' ')[1]);
}

async function main(): Promise<void> {
  if (args['cost-only']) {
    const cost = await drainCost(await loadCore(args.core));
    console.log(`cost ${cost}`);
    return;
  }
  await rateRun(await loadCore(args.core));
  if (args.compare === undefined) {
    const cost = await drainCost(await loadCore(args.core));
    console.log(`take path with no limit set: ${cost.toFixed(3)} CPU s per 10,000 jobs (acceptMany 100 + finishMany)`);
    return;
  }
  const here = join(HERE, '../packages/core/src');
  const there = resolve(args.compare, 'packages/core/src');
  const mine: number[] = [];
  const theirs: number[] = [];
  for (let round = 0; round < 3; round++) {
    mine.push(costInChild(here));
    theirs.push(costInChild(there));
  }
  const ratio = median(mine) / median(theirs);
  console.log(`take path with no limit set, CPU s per 10,000 jobs (3 interleaved rounds, median):`);
  console.log(`  this checkout ${median(mine).toFixed(3)} [${mine.map((v) => v.toFixed(3)).join(', ')}]`);
  console.log(`  ${args.compare} ${median(theirs).toFixed(3)} [${theirs.map((v) => v.toFixed(3)).join(', ')}]`);
  console.log(`  ratio ${ratio.toFixed(3)} (target <= 1.10)`);
}

await main();
