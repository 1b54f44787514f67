// The runtime's modules import one another without cycles, type-only
// imports included: each file can be read, and changed, with only what it
// imports in mind.

import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const srcDir = fileURLToPath(new URL('../../packages/actors/src/', import.meta.url));

function localImports(file: string): string[] {
  const source = readFileSync(srcDir + file, 'utf8');
  const found: string[] = [];
  for (const match of source.matchAll(/(?:import|export)\s[^;]*?\sfrom\s+'\.\/([^']+)'/g)) {
    found.push((match[1] as string).replace(/\.js$/, '.ts'));
  }
  return found;
}

test('the modules of @jobtree/actors import one another without cycles', (t) => {
  const files = readdirSync(srcDir).filter((file) => (file.endsWith('.ts') && !file.endsWith('.d.ts')) || file.endsWith('.mjs'));
  const graph = new Map(files.map((file) => [file, localImports(file)]));
  t.true(graph.get('actor-host.ts')?.includes('actor-cell.ts'), 'the scan sees imports');
  const cycles: string[] = [];
  const done = new Set<string>();
  const visit = (file: string, path: string[]): void => {
    for (const next of graph.get(file) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) cycles.push([...path.slice(at), next].join(' -> '));
      else if (!done.has(next)) visit(next, [...path, next]);
    }
    done.add(file);
  };
  for (const file of files) if (!done.has(file)) visit(file, [file]);
  t.deepEqual(cycles, []);
});
