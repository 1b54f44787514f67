// The jobs actors that live on the app's host threads (an activity monitor,
// a notifier and a type monitor per job type) reach the store through the
// core's bridge only: loading them must not load the store itself. Every
// host thread would otherwise load lmdb's native addon and its buffers, and
// the store's modules, that it never uses.

import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { reachableFrom, runtimeImportGraph } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOSTED = ['activity-monitor.ts', 'notifier.ts', 'type-monitor.ts'].map((name) =>
  fileURLToPath(new URL(`../../packages/jobtree/src/app/${name}`, import.meta.url)),
);
const STORE = ['packages/core/src/storage/', 'packages/core/src/jobs/', 'packages/core/src/sharing/', 'packages/core/src/index.ts'];
const STORE_PACKAGES = ['lmdb', 'msgpackr', 'fdb-tuple', 'fs-native-extensions', 'foundationdb'];

for (const module of HOSTED) {
  const name = relative(ROOT, module);
  test(`${name}, run on host threads, loads neither the store's modules nor its packages`, (t) => {
    const loaded = [...reachableFrom(runtimeImportGraph(ROOT), module)];
    const files = loaded.filter((node) => node.startsWith('/')).map((file) => relative(ROOT, file));
    t.deepEqual(
      files.filter((file) => STORE.some((part) => file.startsWith(part))),
      [],
    );
    t.deepEqual(
      loaded.filter((specifier) => STORE_PACKAGES.includes(specifier)),
      [],
    );
  });
}

test('the graph reaches a workspace package’s subpath entry (its errors) as the file it names', (t) => {
  const graph = runtimeImportGraph(ROOT);
  const errors = fileURLToPath(new URL('../../packages/core/src/errors.ts', import.meta.url));
  const bridgeClient = fileURLToPath(new URL('../../packages/jobtree/src/app/bridge-client.ts', import.meta.url));
  t.true(graph.get(bridgeClient)?.has(errors));
});
