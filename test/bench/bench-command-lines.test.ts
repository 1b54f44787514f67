// Every benchmark a `bench:*` script runs stops at once, with its usage, on
// an option it does not take (a benchmark runs for minutes: one that ignored
// a misspelt flag would run them with the defaults), and `--help` prints
// that usage.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const scripts = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;
const benchmarks = Object.entries(scripts)
  .filter(([name]) => name.startsWith('bench:'))
  .map(([name, command]) => ({ name, file: /\bbench\/[\w/.-]+\.ts\b/.exec(command)?.[0] }));

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

// Two at a time: each is a node process loading tsx and the benchmark's modules.
let running = 0;
const waiting: (() => void)[] = [];
async function run(file: string, options: string[], env: Record<string, string> = {}): Promise<Exit> {
  if (running >= 2) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await new Promise<Exit>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', file, ...options], { cwd: ROOT, timeout: 60_000, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      });
    });
  } finally {
    running--;
    waiting.shift()?.();
  }
}

test('package.json names a benchmark file for every bench script', (t) => {
  t.true(benchmarks.length >= 10, `${benchmarks.length} bench scripts`);
  for (const { name, file } of benchmarks) t.truthy(file, `${name}: ${scripts[name]}`);
});

test('--help prints the usage on stdout and exits 0', async (t) => {
  const exit = await run('bench/sharing.ts', ['--help']);
  t.is(exit.code, 0, exit.stderr);
  t.regex(exit.stdout, /^usage: pnpm bench:sharing /);
  t.is(exit.stderr, '');
});

// The usage printed here is the one --help prints (bench-options.ts): this
// checks that each benchmark reads its command line through it.
for (const { name, file } of benchmarks) {
  if (file === undefined) continue;
  test(`${name} refuses an option it does not take with its usage and exit code 2`, async (t) => {
    const exit = await run(file, ['--no-such-option']);
    t.is(exit.code, 2, exit.stderr);
    t.regex(exit.stderr, /no-such-option/);
    t.regex(exit.stderr, /usage: /);
    t.is(exit.stdout, '');
  });
}

// Values a benchmark cannot run with, and options that only set up a part
// not asked for: each stops it before it starts anything, not part way
// through or with the option ignored.
const refused: { file: string; options: string[]; env?: Record<string, string>; why: RegExp }[] = [
  // The rate run counts whole windows of 1 s; a rate limit's max is a whole number.
  { file: 'bench/limits.ts', options: ['--seconds', '2.5'], why: /--seconds must be a positive integer/ },
  { file: 'bench/limits.ts', options: ['--rate', '0.5'], why: /--rate must be a positive integer/ },
  { file: 'bench/jobs.ts', options: ['--core', '../another-checkout/packages/core/src'], why: /--drain/ },
  { file: 'bench/jobs.ts', options: ['--drain', '--latency'], why: /give one/ },
  { file: 'bench/processors.ts', options: ['--max-jobs', '8'], why: /--drain-only/ },
  { file: 'bench/processors.ts', options: ['--drain-only', '--latency-only'], why: /give one/ },
  { file: 'bench/retention.ts', options: [], env: { RETENTION_BENCH_ROUNDS: '0' }, why: /RETENTION_BENCH_ROUNDS must be a positive integer/ },
];
for (const { file, options, env, why } of refused) {
  const given = [...Object.entries(env ?? {}).map(([name, value]) => `${name}=${value}`), ...options].join(' ');
  test(`${file} ${given} stops with why, the usage and exit code 2`, async (t) => {
    const exit = await run(file, options, env);
    t.is(exit.code, 2, exit.stderr);
    t.regex(exit.stderr, why);
    t.regex(exit.stderr, /usage: /);
    t.is(exit.stdout, '');
  });
}
