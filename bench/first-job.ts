// Benchmark of a processor's start, run by `pnpm bench:first-job [--rounds N] [--installed DIR]`:
//
// 1. First job: a job waits, `app.process` is called (a handler module, run
//    in handler threads, and a function, run on the main thread); the time
//    until it resolves, and from then until the job finished (target <= 30
//    ms, built packages), beside the LocalQueue path in the same process:
//    the queue made -> the job taken and finished.
// 2. 100 types with processors against none, in one app: the process's
//    threads (target: at most cores + 2 more) and resident memory (target
//    <= 150 MB).
//
// Each runs in a child process (bench/first-job/driver.mjs), twice: from
// the workspace's TypeScript sources under tsx, and built: from an app with
// the packed tarballs installed, with plain node. `--installed DIR` names
// such an app (made by the pack test's steps: `pnpm run pack DIR/tarballs`,
// then `npm install` of them); without it the bench packs and installs one
// in a temp dir first (a few minutes).

import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { benchOptions, positiveInteger } from './bench-options.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DRIVER_DIR = fileURLToPath(new URL('./first-job/', import.meta.url));

const USAGE = `usage: pnpm bench:first-job [--rounds N] [--installed DIR]
  --rounds N       rounds per build (default 5)
  --installed DIR  an app with the packed tarballs installed (without it, one is packed and installed first)`;
const args = benchOptions(USAGE, {
  rounds: { type: 'string', default: '5' },
  installed: { type: 'string' },
});
const rounds = positiveInteger(USAGE, '--rounds', args.rounds);

interface DriverResult {
  process: { processMs: number; firstJobMs: number }[];
  processMain: { processMs: number; firstJobMs: number }[];
  queue: { firstJobMs: number }[];
  types: {
    none: { threads: number | undefined; rssMb: number };
    all: { threads: number | undefined; rssMb: number; handlerThreads: number };
  };
}

/** The environment of a user's shell: no NODE_OPTIONS, no settings of the running pnpm script. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || key.toLowerCase().startsWith('npm_')) continue;
    env[key] = value;
  }
  return env;
}

async function drive(cwd: string, driver: string, nodeArgs: string[]): Promise<DriverResult> {
  const data = mkdtempSync(join(tmpdir(), 'jobtree-bench-first-job-'));
  try {
    const { stdout } = await run(process.execPath, [...nodeArgs, driver, data, String(rounds)], {
      cwd,
      env: userEnv(),
      timeout: 900_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as DriverResult;
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}

/** An app outside the workspace with the packed tarballs installed (as the pack test makes one). */
async function installBuilt(): Promise<{ app: string; scratch: string }> {
  const scratch = mkdtempSync(join(tmpdir(), 'jobtree-bench-pack-'));
  const tarballs = join(scratch, 'tarballs');
  const { stdout } = await run(process.execPath, [join(ROOT, 'scripts', 'pack.mjs'), tarballs], { cwd: ROOT, env: userEnv(), timeout: 900_000, maxBuffer: 64 * 1024 * 1024 });
  const { tarballs: written } = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { tarballs: Record<string, string> };
  const app = join(scratch, 'app');
  mkdirSync(app);
  const overrides = Object.fromEntries(Object.entries(written).filter(([name]) => name !== 'jobtree').map(([name, tarball]) => [name, `file:${tarball}`]));
  const manifest = { name: 'jobtree-bench-app', private: true, type: 'module', dependencies: { jobtree: `file:${written.jobtree}` }, overrides };
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app, env: userEnv(), timeout: 900_000 });
  return { app, scratch };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const ms = (value: number): string => `${value.toFixed(1)} ms`;

function report(how: string, result: DriverResult): void {
  const queue = result.queue.map((round) => round.firstJobMs);
  console.log(`\n${how} (${result.process.length} rounds: median, best)`);
  for (const [where, rounds] of [
    ['threads', result.process],
    ['main   ', result.processMain],
  ] as const) {
    const first = rounds.map((round) => round.firstJobMs);
    console.log(`  app.process (${where}): process() resolved after     ${ms(median(rounds.map((round) => round.processMs)))}`);
    console.log(`  app.process (${where}): first job finished after      ${ms(median(first))}, best ${ms(Math.min(...first))}  (target <= 30 ms, built)`);
  }
  console.log(`  LocalQueue:            first job finished after      ${ms(median(queue))}, best ${ms(Math.min(...queue))}`);
  const { none, all } = result.types;
  const extra = none.threads === undefined || all.threads === undefined ? 'n/a' : String(all.threads - none.threads);
  console.log(`  100 types with processors: threads +${extra} (handler threads ${all.handlerThreads}; target <= cores + 2 = ${availableParallelism() + 2})`);
  console.log(`  resident memory: ${none.rssMb.toFixed(0)} MB with no processor, ${all.rssMb.toFixed(0)} MB with 100 types (target <= 150 MB)`);
}

const source = await drive(ROOT, join(DRIVER_DIR, 'driver.mjs'), ['--import', 'tsx']);
report('From TypeScript sources (tsx)', source);

let built: { app: string; scratch: string | undefined };
if (args.installed !== undefined) built = { app: args.installed, scratch: undefined };
else {
  console.log('\npacking and installing the built packages…');
  built = await installBuilt();
}
try {
  const bench = join(built.app, 'bench-first-job');
  mkdirSync(bench, { recursive: true });
  for (const file of ['driver.mjs', 'noop-handler.mjs']) copyFileSync(join(DRIVER_DIR, file), join(bench, file));
  if (!existsSync(join(built.app, 'node_modules', 'jobtree', 'package.json'))) throw new Error(`${built.app} has no jobtree installed`);
  report('Built, installed from the tarballs (plain node)', await drive(built.app, join(bench, 'driver.mjs'), []));
} finally {
  if (built.scratch !== undefined) rmSync(built.scratch, { recursive: true, force: true });
}
