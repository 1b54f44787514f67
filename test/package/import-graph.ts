// The module graph of the workspace's sources, and the cycles in it. Type-only
// imports count: a cycle of types still ties two modules into one concept.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import type * as TypeScript from 'typescript';

// Required, not imported: importing this CommonJS module has Node scan its
// several megabytes for export names first, over a CPU second per test file.
const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript;

/** Module file -> the module files it imports (static, dynamic, type-only and re-exports). */
export type ImportGraph = Map<string, Set<string>>;

const SOURCE = /\.(ts|mts|mjs|js)$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return SOURCE.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** A relative specifier as NodeNext writes it (`./x.js` for `x.ts`), resolved to the file on disk. */
function resolveRelative(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  const candidates = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts'), join(target, 'index.ts')];
  return candidates.find((file) => existsSync(file) && statSync(file).isFile());
}

/**
 * Every module file under `packages/<name>/src`, and each workspace package's
 * entries by the specifier that loads them: `src/index.ts` by its name, and
 * each subpath of its `exports` (`@scope/name/errors`) by name and subpath.
 */
function workspaceSources(root: string): { entryByName: Map<string, string>; files: string[] } {
  const packagesDir = join(root, 'packages');
  const entryByName = new Map<string, string>();
  const files: string[] = [];
  for (const name of readdirSync(packagesDir)) {
    const manifestPath = join(packagesDir, name, 'package.json');
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { name: string; exports?: Record<string, unknown> };
    entryByName.set(manifest.name, join(packagesDir, name, 'src', 'index.ts'));
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (subpath !== '.' && typeof target === 'string') entryByName.set(`${manifest.name}${subpath.slice(1)}`, join(packagesDir, name, target));
    }
    files.push(...sourceFiles(join(packagesDir, name, 'src')));
  }
  return { entryByName, files };
}

/**
 * The graph of every module under `packages/<name>/src`, with imports of a
 * workspace package (`@scope/name`) pointing at that package's `src/index.ts`.
 */
export function workspaceImportGraph(root: string): ImportGraph {
  const { entryByName, files } = workspaceSources(root);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const imports = new Set<string>();
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of importedFiles) {
      const target = specifier.startsWith('.') ? resolveRelative(file, specifier) : entryByName.get(specifier);
      if (target !== undefined && target !== file) imports.add(target);
    }
    graph.set(file, imports);
  }
  return graph;
}

/**
 * The strongly connected components with more than one module (Tarjan's
 * algorithm): each is a set of modules that import one another in a cycle.
 */
export function importCycles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        connect(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return cycles;
}

/** A cycle as repository-relative paths, for a failure message. */
export function describeCycle(root: string, cycle: readonly string[]): string {
  return cycle.map((file) => relative(root, file)).join(' <-> ');
}

/** The specifiers a module loads when it runs: static imports, re-exports and literal dynamic imports; `import type` and `export type` are erased, so left out. */
export function runtimeSpecifiers(text: string): string[] {
  const source = ts.createSourceFile('module.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: TypeScript.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.importClause?.isTypeOnly !== true) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier) && !node.isTypeOnly) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments;
      if (specifier !== undefined && ts.isStringLiteralLike(specifier)) found.push(specifier.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * What loading each module of `packages/<name>/src` loads: the module files
 * of its runtime imports (workspace packages pointing at their `src/index.ts`),
 * and other packages by their bare specifier (`lmdb`, `node:fs`).
 */
export function runtimeImportGraph(root: string): ImportGraph {
  const { entryByName, files } = workspaceSources(root);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const imports = new Set<string>();
    for (const specifier of runtimeSpecifiers(readFileSync(file, 'utf8'))) {
      const target = specifier.startsWith('.') ? resolveRelative(file, specifier) : (entryByName.get(specifier) ?? specifier);
      if (target !== undefined && target !== file) imports.add(target);
    }
    graph.set(file, imports);
  }
  return graph;
}

/** Every node reachable from `start` (itself included). */
export function reachableFrom(graph: ImportGraph, start: string): Set<string> {
  const seen = new Set<string>([start]);
  const pending = [start];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    for (const target of graph.get(node) ?? []) {
      if (!seen.has(target)) {
        seen.add(target);
        pending.push(target);
      }
    }
  }
  return seen;
}
