// What a user gets from the registry: every workspace package packed with
// `pnpm pack` (which builds it), installed with npm into an app outside the
// workspace, run with plain `node` (no tsx anywhere), and type-checked as a
// TypeScript consumer against the published declaration files.

import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/app', import.meta.url));
const STEP_TIMEOUT_MS = 300_000;

interface Manifest {
  name: string;
  private?: boolean;
  exports?: unknown;
  types?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** The environment of a child that must behave as a user's shell would: no tsx, no settings from the running pnpm/npm script. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || key.toLowerCase().startsWith('npm_')) continue;
    env[key] = value;
  }
  return env;
}

/** The `.mjs` files under a package's src/, relative to it. */
function javaScriptSources(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) return javaScriptSources(dir, path);
    return entry.name.endsWith('.mjs') ? [path] : [];
  });
}

async function exec(file: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd, env: userEnv(), timeout: STEP_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`, { cause: error });
  }
}

interface Installed {
  scratch: string;
  app: string;
  /** package name -> tarball path */
  packed: Map<string, string>;
  /** package name -> its src/ directory */
  sourceDirs: Map<string, string>;
}

let installed: Installed | undefined;

function theInstall(): Installed {
  if (installed === undefined) throw new Error('the pack and install step did not run');
  return installed;
}

test.before('pack every package with the pack script, and install jobtree alone by name with npm into an app outside the workspace', async (t) => {
  t.timeout(3 * STEP_TIMEOUT_MS);
  const scratch = mkdtempSync(join(tmpdir(), 'jobtree-pack-'));
  const tarballs = join(scratch, 'tarballs');
  const app = join(scratch, 'app');
  installed = { scratch, app, packed: new Map(), sourceDirs: new Map() };

  // The script README.md gives users: each pack runs the package's prepack (a clean build into dist/).
  const printed = await exec(process.execPath, [join(ROOT, 'scripts', 'pack.mjs'), tarballs], ROOT);
  const { tarballs: written } = JSON.parse(printed.trim().split('\n').at(-1) ?? '{}') as { tarballs: Record<string, string> };
  for (const [name, tarball] of Object.entries(written)) {
    installed.packed.set(name, tarball);
    const dir = readdirSync(join(ROOT, 'packages')).find(
      (entry) => existsSync(join(ROOT, 'packages', entry, 'package.json')) &&
        (JSON.parse(readFileSync(join(ROOT, 'packages', entry, 'package.json'), 'utf8')) as Manifest).name === name,
    );
    if (dir !== undefined) installed.sourceDirs.set(name, join(ROOT, 'packages', dir, 'src'));
  }

  // Install like a user: `npm install jobtree`, its third-party dependencies
  // from the registry. Until the @jobtree packages are published, npm's
  // overrides point their names at the tarballs, the way a registry would
  // serve them. --ignore-scripts: lmdb's native code comes prebuilt in
  // optional packages; the only install script that would do work is
  // foundationdb's source build.
  cpSync(FIXTURE, app, { recursive: true });
  const jobtree = installed.packed.get('jobtree');
  if (jobtree === undefined) throw new Error('the pack script packed no jobtree');
  const overrides = Object.fromEntries([...installed.packed].filter(([name]) => name !== 'jobtree').map(([name, tarball]) => [name, `file:${tarball}`]));
  const manifest = { name: 'jobtree-pack-test-app', private: true, type: 'module', dependencies: { jobtree: `file:${jobtree}` }, overrides };
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await exec('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], app);
});

test.after.always('remove the temporary app and tarballs', () => {
  if (installed !== undefined) rmSync(installed.scratch, { recursive: true, force: true });
});

test.serial('each tarball holds built JavaScript, declarations and worker entries, with a manifest pointing at them', async (t) => {
  const { packed, sourceDirs, scratch } = theInstall();
  t.deepEqual([...packed.keys()].sort(), ['@jobtree/actors', '@jobtree/core', '@jobtree/supervisor', 'jobtree']);
  for (const [name, tarball] of packed) {
    const files = (await exec('tar', ['tzf', tarball], scratch)).split('\n').filter(Boolean);
    t.true(files.includes('package/dist/index.js'), `${name} ships dist/index.js`);
    t.true(files.includes('package/dist/index.d.ts'), `${name} ships dist/index.d.ts`);
    t.false(
      files.some((file) => file.startsWith('package/src/') || file.endsWith('.tsbuildinfo')),
      `${name} ships no sources or build info`,
    );
    // Worker entry modules are plain JavaScript next to the sources; the build must carry them into dist.
    for (const entry of javaScriptSources(sourceDirs.get(name) ?? '')) {
      t.true(files.includes(`package/dist/${entry}`), `${name} ships dist/${entry}`);
    }
    const manifest = JSON.parse(await exec('tar', ['xzfO', tarball, 'package/package.json'], scratch)) as Manifest;
    // Second entries: jobtree's for handler modules, the core's error classes alone (for the jobs actors on host threads).
    const secondEntries: Record<string, Record<string, { types: string; default: string }>> = {
      jobtree: { './handler': { types: './dist/handler.d.ts', default: './dist/handler.js' } },
      '@jobtree/core': { './errors': { types: './dist/errors.d.ts', default: './dist/errors.js' } },
    };
    t.deepEqual(manifest.exports, { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, ...secondEntries[name] }, `${name} exports`);
    const deps = { ...manifest.dependencies, ...manifest.optionalDependencies };
    t.false(
      Object.values(deps).some((range) => range.startsWith('workspace:')),
      `${name} has no workspace: ranges`,
    );
    t.false('tsx' in deps, `${name} does not depend on tsx`);
    const published = manifest as Manifest & { license?: string; repository?: unknown; engines?: Record<string, string>; files?: string[] };
    t.is(published.license, 'Apache-2.0', `${name} names its license`);
    t.truthy(published.repository, `${name} names its repository`);
    t.truthy(published.engines?.node, `${name} names the Node versions it runs on`);
    t.true(files.includes('package/LICENSE') && files.includes('package/README.md'), `${name} ships its README and LICENSE`);
  }
  const supervisor = JSON.parse(await exec('tar', ['xzfO', packed.get('@jobtree/supervisor') ?? '', 'package/package.json'], scratch)) as Manifest;
  t.deepEqual(Object.keys(supervisor.dependencies ?? {}).sort(), ['@jobtree/actors', 'eventemitter3'], '@jobtree/supervisor is OTP alone');
});

test.serial('the app has jobtree alone in its manifest, and the jobtree bin is the CLI, run with plain node', async (t) => {
  const { app, scratch } = theInstall();
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as Manifest;
  t.deepEqual(Object.keys(manifest.dependencies ?? {}), ['jobtree']);
  const bin = join(app, 'node_modules', '.bin', 'jobtree');
  t.true(existsSync(bin), 'npm links the jobtree bin');
  const help = await exec(bin, ['--help'], app);
  t.regex(help, /Usage: jobtree/);
  // Against a closed store that an app made: add a job and read it back.
  const store = join(scratch, 'cli-store');
  const makeStore = `const { openJobs } = await import('jobtree'); const jobs = await openJobs({ path: ${JSON.stringify(store)} }); await jobs.close();`;
  await exec(process.execPath, ['--input-type=module', '-e', makeStore], app);
  await exec(bin, ['set-timeout', 'mail', '30', '--path', store], app);
  await exec(bin, ['add', 'mail', 'm1', '{"to":"a@b.c"}', '--path', store], app);
  const shown = await exec(bin, ['job', 'mail', 'm1', '--path', store, '--json'], app);
  t.like(JSON.parse(shown), { id: 'm1', state: 'pending', data: { to: 'a@b.c' } });
});

test.serial('a plain Node app runs jobs, actors, supervisors, the jobs application and a handler module importing jobtree/handler, with no tsx installed', async (t) => {
  const { app, scratch } = theInstall();
  t.false(existsSync(join(app, 'node_modules', 'tsx')), 'no tsx is installed for the app');
  t.false(existsSync(join(app, 'node_modules', 'typescript')), 'no typescript is installed for the app');
  // Built JavaScript in the main thread and in every worker thread.
  const stdout = await exec(process.execPath, ['app.mjs', join(scratch, 'data')], app);
  const steps = Object.fromEntries(
    stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => {
        const { step, value } = JSON.parse(line) as { step: string; value: unknown };
        return [step, value];
      }),
  );
  t.deepEqual(steps, {
    'job finished': 'finished',
    'pooled counter': 3,
    'dedicated counter': 15,
    'state through the core bridge': 'finished',
    'supervised child restarted': 'counter',
    'restarted counter': 100,
    'subscribed to': 'pending',
    'subscription saw': 'finished',
    'processed by the handler': { width: 32, resized: true },
    'one NonRetryableError for both entries': true,
    closed: true,
  });
});

test.serial('in an app run under tsx, a JavaScript handler’s first job runs on a thread started with no TypeScript loader', async (t) => {
  const { app, scratch } = theInstall();
  // The workspace's tsx, by URL (the app has none installed): as a TypeScript app on the built package would run.
  const tsx = import.meta.resolve('tsx');
  const stdout = await exec(process.execPath, [`--import=${tsx}`, 'first-job.mjs', join(scratch, 'data')], app);
  const steps = Object.fromEntries(
    stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => {
        const { step, value } = JSON.parse(line) as { step: string; value: unknown };
        return [step, value];
      }),
  ) as { 'first job'?: { processMs: number; firstJobMs: number }; 'handler thread'?: { execArgv: string[]; typescriptLoads: boolean } };
  t.log(`process() resolved in ${steps['first job']?.processMs.toFixed(1)} ms; the first job finished ${steps['first job']?.firstJobMs.toFixed(1)} ms later`);
  t.truthy(steps['first job'], 'the first job finished');
  const thread = steps['handler thread'];
  t.truthy(thread, 'the probe job finished');
  t.false(thread?.execArgv.some((arg) => arg.includes('tsx')), `the handler thread's execArgv: ${JSON.stringify(thread?.execArgv)}`);
  t.false(thread?.typescriptLoads, 'no TypeScript loader runs in the handler thread');
});

test.serial('a TypeScript consumer type-checks against the published declaration files', async (t) => {
  const { app } = theInstall();
  // The workspace's TypeScript and Node types; skipLibCheck is off, so the .d.ts files themselves are checked.
  const require = createRequire(import.meta.url);
  const tsc = join(require.resolve('typescript/package.json'), '..', 'bin', 'tsc');
  const withNodeTypes = { extends: './tsconfig.json', compilerOptions: { typeRoots: [join(ROOT, 'node_modules', '@types')] } };
  writeFileSync(join(app, 'tsconfig.check.json'), JSON.stringify(withNodeTypes));
  await exec(process.execPath, [tsc, '-p', 'tsconfig.check.json'], app);
  t.pass();
});
