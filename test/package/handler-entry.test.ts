// `jobtree/handler` is the entry a handler module imports in every handler
// thread: it must load a few small modules, never the store (and lmdb's
// native addon), the jobs application or the admin code, and it must hand
// out the very classes the main entry does.

import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import * as main from '../../packages/jobtree/src/index.js';
import * as handler from '../../packages/jobtree/src/handler.js';
import { reachableFrom, runtimeImportGraph, runtimeSpecifiers } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HANDLER_ENTRY = fileURLToPath(new URL('../../packages/jobtree/src/handler.ts', import.meta.url));
const HEAVY = ['packages/core/', 'packages/actors/', 'packages/supervisor/', 'packages/jobtree/src/app/', 'packages/jobtree/src/admin/', 'packages/jobtree/src/cli/'];

test('runtimeSpecifiers keeps what runs (imports, re-exports, literal dynamic imports) and leaves out import type and export type', (t) => {
  const text = [
    "import type { A } from 'erased-import';",
    "export type { B } from 'erased-export';",
    "import { type C } from 'kept-empty';",
    "import d from 'kept-default';",
    "export { e } from './kept-reexport.js';",
    "import 'kept-side-effect';",
    "const f = await import('kept-dynamic');",
  ].join('\n');
  t.deepEqual(runtimeSpecifiers(text).sort(), ['./kept-reexport.js', 'kept-default', 'kept-dynamic', 'kept-empty', 'kept-side-effect']);
});

test('jobtree/handler loads neither @jobtree/core (its store and lmdb), the actors, the app, the admin code nor any package but Node’s own', (t) => {
  const loaded = [...reachableFrom(runtimeImportGraph(ROOT), HANDLER_ENTRY)];
  const files = loaded.filter((node) => node.startsWith('/')).map((file) => relative(ROOT, file));
  const packages = loaded.filter((node) => !node.startsWith('/'));
  t.deepEqual(files.filter((file) => HEAVY.some((dir) => file.startsWith(dir))), []);
  t.deepEqual(packages.filter((specifier) => !specifier.startsWith('node:')), []);
  t.true(files.length <= 8, `jobtree/handler loads ${files.length} modules: ${files.join(', ')}`);
});

test('the main entry hands out the very functions and classes of jobtree/handler, so instanceof holds across them', (t) => {
  t.is(main.defineHandler, handler.defineHandler);
  t.is(main.NonRetryableError, handler.NonRetryableError);
  t.is(main.HandlerAbortError, handler.HandlerAbortError);
  t.is(main.SchedulerError, handler.SchedulerError);
  t.true(new handler.NonRetryableError('bad input') instanceof main.NonRetryableError);
});
