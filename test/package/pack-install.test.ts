// What a user gets from the registry: every workspace package packed with
// `pnpm pack` (which builds it), installed with npm into an app outside the
// workspace, run with plain `node` (no tsx anywhere), and type-checked as a
// TypeScript consumer against the published declaration files.

import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

interface WorkspacePackage {
  dir: string;
  manifest: Manifest;
}

/** The publishable workspace packages, each after the ones it depends on (pnpm pack builds a package's references). */
function workspacePackages(): WorkspacePackage[] {
  const packagesDir = join(ROOT, 'packages');
  const all = readdirSync(packagesDir)
    .map((name) => join(packagesDir, name))
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest }))
    .filter((pkg) => pkg.manifest.private !== true);
  const byName = new Map(all.map((pkg) => [pkg.manifest.name, pkg]));
  const ordered: WorkspacePackage[] = [];
  const visit = (pkg: WorkspacePackage): void => {
    if (ordered.includes(pkg)) return;
    for (const dep of Object.keys(pkg.manifest.dependencies ?? {})) {
      const inner = byName.get(dep);
      if (inner !== undefined) visit(inner);
    }
    ordered.push(pkg);
  };
  all.forEach(visit);
  return ordered;
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

/** pnpm as the README's commands provide it (on PATH inside `pnpm test`), or through npx. */
function pnpmCommand(): [string, string[]] {
  try {
    execFileSync('pnpm', ['--version'], { stdio: 'ignore' });
    return ['pnpm', []];
  } catch {
    return ['npx', ['--yes', 'pnpm@10']];
  }
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

test.before('pack every package and install the tarballs with npm into an app outside the workspace', async (t) => {
  t.timeout(3 * STEP_TIMEOUT_MS);
  const scratch = mkdtempSync(join(tmpdir(), 'jobtree-pack-'));
  const tarballs = join(scratch, 'tarballs');
  const app = join(scratch, 'app');
  mkdirSync(tarballs);
  installed = { scratch, app, packed: new Map(), sourceDirs: new Map() };

  // Pack: each pack runs the package's prepack (a clean build into dist/).
  const [pnpm, pnpmArgs] = pnpmCommand();
  for (const { dir, manifest } of workspacePackages()) {
    installed.sourceDirs.set(manifest.name, join(dir, 'src'));
    const before = new Set(readdirSync(tarballs));
    await exec(pnpm, [...pnpmArgs, 'pack', '--pack-destination', tarballs], dir);
    const tarball = readdirSync(tarballs).find((file) => !before.has(file));
    if (tarball === undefined) throw new Error(`pnpm pack wrote no tarball for ${manifest.name}`);
    installed.packed.set(manifest.name, join(tarballs, tarball));
  }

  // Install like a user: npm, from the registry for third-party dependencies.
  // --ignore-scripts: lmdb's native code comes prebuilt in optional packages;
  // the only install script that would do work is foundationdb's source build.
  cpSync(FIXTURE, app, { recursive: true });
  const dependencies = Object.fromEntries([...installed.packed].map(([name, tarball]) => [name, `file:${tarball}`]));
  const manifest = { name: 'jobtree-pack-test-app', private: true, type: 'module', dependencies };
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await exec('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], app);
});

test.after.always('remove the temporary app and tarballs', () => {
  if (installed !== undefined) rmSync(installed.scratch, { recursive: true, force: true });
});

test.serial('each tarball holds built JavaScript, declarations and worker entries, with a manifest pointing at them', async (t) => {
  const { packed, sourceDirs, scratch } = theInstall();
  t.deepEqual([...packed.keys()].sort(), ['@jobtree/actors', '@jobtree/cli', '@jobtree/core', 'jobtree']);
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
    t.deepEqual(manifest.exports, { '.': { types: './dist/index.d.ts', default: './dist/index.js' } }, `${name} exports`);
    const deps = { ...manifest.dependencies, ...manifest.optionalDependencies };
    t.false(
      Object.values(deps).some((range) => range.startsWith('workspace:')),
      `${name} has no workspace: ranges`,
    );
    t.false('tsx' in deps, `${name} does not depend on tsx`);
  }
});

test.serial('a plain Node app runs jobs, actors, supervisors, the jobs application and a handler module with no tsx installed', async (t) => {
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
    closed: true,
  });
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
