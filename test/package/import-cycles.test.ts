import { fileURLToPath } from 'node:url';
import test from 'ava';
import { describeCycle, type ImportGraph, importCycles, workspaceImportGraph } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const graphOf = (edges: Record<string, string[]>): ImportGraph =>
  new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));

test('importCycles finds each cycle once, as one group of modules, and ignores chains', (t) => {
  const graph = graphOf({
    a: ['b'],
    b: ['c'],
    c: ['a', 'd'],
    d: ['e'],
    e: [],
    f: ['g'],
    g: ['f'],
  });
  const cycles = importCycles(graph).sort((x, y) => (x[0] ?? '').localeCompare(y[0] ?? ''));
  t.deepEqual(cycles, [
    ['a', 'b', 'c'],
    ['f', 'g'],
  ]);
  t.deepEqual(importCycles(graphOf({ a: ['b'], b: ['c'], c: [] })), []);
});

test('the workspace graph resolves NodeNext .js specifiers to their .ts modules and packages to their entry', (t) => {
  const graph = workspaceImportGraph(ROOT);
  const file = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
  t.true(graph.get(file('packages/core/src/index.ts'))?.has(file('packages/core/src/errors.ts')));
  t.true(graph.get(file('packages/supervisor/src/supervisor.ts'))?.has(file('packages/actors/src/index.ts')));
});

test('no module of packages/*/src is part of an import cycle (type-only imports included)', (t) => {
  const cycles = importCycles(workspaceImportGraph(ROOT));
  t.deepEqual(
    cycles.map((cycle) => describeCycle(ROOT, cycle)),
    [],
    'break each cycle: move what both sides need into a module of its own',
  );
});
