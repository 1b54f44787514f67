// The layers of the workspace. In @jobtree/core the jobs layer runs on the
// storage contract (storage/interfaces.ts, and the optional fast paths of
// storage/fast-paths.ts), never on one backend's internals, so that every
// backend runs it the same way. @jobtree/supervisor is OTP supervisors only:
// users who want no jobs get neither the store nor the handler pool, the
// logger or the metrics; and @jobtree/actors does not know the core.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { type ImportGraph, workspaceImportGraph } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const JOBS = fileURLToPath(new URL('../../packages/core/src/jobs/', import.meta.url));
const BACKENDS = ['embedded', 'foundationdb'].map((name) =>
  fileURLToPath(new URL(`../../packages/core/src/storage/${name}/`, import.meta.url)),
);

/** `[from, to]` for every import of a module under `fromDir` of a module under one of `toDirs`. */
function importsBetween(graph: ImportGraph, fromDir: string, toDirs: readonly string[]): [string, string][] {
  const found: [string, string][] = [];
  for (const [from, targets] of graph) {
    if (!from.startsWith(fromDir)) continue;
    for (const to of targets) if (toDirs.some((dir) => to.startsWith(dir))) found.push([from, to]);
  }
  return found;
}

test('importsBetween finds the imports from one folder into others, subfolders included, and only those', (t) => {
  const graph: ImportGraph = new Map([
    ['/r/jobs/a.ts', new Set(['/r/storage/embedded/x.ts', '/r/storage/interfaces.ts'])],
    ['/r/jobs/sub/b.ts', new Set(['/r/storage/foundationdb/y.ts'])],
    ['/r/storage/embedded/x.ts', new Set(['/r/storage/foundationdb/y.ts'])],
  ]);
  t.deepEqual(importsBetween(graph, '/r/jobs/', ['/r/storage/embedded/', '/r/storage/foundationdb/']), [
    ['/r/jobs/a.ts', '/r/storage/embedded/x.ts'],
    ['/r/jobs/sub/b.ts', '/r/storage/foundationdb/y.ts'],
  ]);
});

test('no module of the jobs layer imports a storage backend (storage/embedded, storage/foundationdb)', (t) => {
  const imports = importsBetween(workspaceImportGraph(ROOT), JOBS, BACKENDS);
  t.deepEqual(
    imports.map(([from, to]) => `${relative(ROOT, from)} -> ${relative(ROOT, to)}`).sort(),
    [],
    'use the storage contract (storage/interfaces.ts) and, for hot paths, storage/fast-paths.ts',
  );
});

/** The bare (package) specifiers that the sources under `dir` import, static or dynamic, with the file importing each. */
function packageImports(dir: string): [string, string][] {
  const found: [string, string][] = [];
  const visit = (path: string): void => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path)) visit(join(path, name));
      return;
    }
    if (!/\.(ts|mts|mjs|js)$/.test(path)) return;
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"./][^'"]*)['"]/g)) {
      found.push([relative(ROOT, path), match[1] as string]);
    }
  };
  visit(dir);
  return found;
}

/** The package a specifier names (`@scope/name` or `name`), without a subpath. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

function manifestDependencies(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
  return ['dependencies', 'optionalDependencies', 'peerDependencies'].flatMap((field) => Object.keys(manifest[field] ?? {}));
}

test('packageImports finds static, dynamic and side-effect imports of packages, not relative ones', (t) => {
  const fixture = fileURLToPath(new URL('./fixtures/imports', import.meta.url));
  t.deepEqual(packageImports(fixture).map(([, specifier]) => specifier).sort(), ['@scope/pkg/sub', 'dynamic-one', 'node:fs', 'side-effect', 'typed']);
  t.is(packageOf('@scope/pkg/sub'), '@scope/pkg');
  t.is(packageOf('piscina/dist/x.js'), 'piscina');
});

const NOT_IN_SUPERVISOR = ['@jobtree/core', 'jobtree', 'piscina', 'pino', 'prom-client', 'comlink', 'lmdb'];

test('@jobtree/supervisor imports and depends on none of the core, the jobs application, piscina, pino or prom-client', (t) => {
  const found = packageImports(join(ROOT, 'packages/supervisor/src')).filter(([, specifier]) => NOT_IN_SUPERVISOR.includes(packageOf(specifier)));
  t.deepEqual(found.map(([file, specifier]) => `${file} -> ${specifier}`), []);
  t.deepEqual(manifestDependencies('packages/supervisor').filter((name) => NOT_IN_SUPERVISOR.includes(name)), []);
});

test('@jobtree/actors and @jobtree/core are siblings: neither imports or depends on the other', (t) => {
  const actors = packageImports(join(ROOT, 'packages/actors/src')).filter(([, specifier]) => packageOf(specifier).startsWith('@jobtree/') || packageOf(specifier) === 'jobtree');
  const core = packageImports(join(ROOT, 'packages/core/src')).filter(([, specifier]) => packageOf(specifier).startsWith('@jobtree/') || packageOf(specifier) === 'jobtree');
  t.deepEqual([...actors, ...core].map(([file, specifier]) => `${file} -> ${specifier}`), []);
  t.false(manifestDependencies('packages/actors').some((name) => name.startsWith('@jobtree/')));
  t.false(manifestDependencies('packages/core').some((name) => name.startsWith('@jobtree/')));
});
