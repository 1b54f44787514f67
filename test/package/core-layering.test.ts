// The layers of @jobtree/core: the jobs layer runs on the storage contract
// (storage/interfaces.ts, and the optional fast paths of storage/fast-paths.ts),
// never on one backend's internals, so that every backend runs it the same way.

import { relative } from 'node:path';
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
