// Run by bench/actors.ts in a child process: cold starts of the actor
// runtime against a raw Worker start, in one process, interleaved so that
// each triple sees about the same machine load. Every repetition uses a fresh
// actor system, so nothing is warm but the process itself.
//
//   node bench/cold-start/cold-start.mjs N                  built JavaScript (packages/actors/dist), no tsx
//   node --import tsx bench/cold-start/cold-start.mjs N --source   TypeScript sources through tsx
//
// Prints one JSON line: { dedicated: ms[], pooled: ms[], raw: ms[] }.
import { Worker } from 'node:worker_threads';

const source = process.argv.includes('--source');
const { createActorSystem } = await import(source ? '@jobtree/actors' : '../../packages/actors/dist/index.js');
const { default: noop } = await import(source ? '../../test/actors/fixtures/bench-actor.ts' : './noop-actor.mjs');
const repeats = Number(process.argv[2] ?? '5');

async function rawWorkerStart() {
  const start = performance.now();
  const worker = new Worker(`require('node:worker_threads').parentPort.postMessage('up')`, { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  const ms = performance.now() - start;
  await worker.terminate();
  return ms;
}

/** A dedicated actor on a system with no spare thread yet: starts one thread, loads the runtime and the actor module. */
async function coldDedicatedSpawn() {
  const system = createActorSystem({ threads: 1 });
  try {
    const start = performance.now();
    const ref = await system.spawn(noop, undefined, { placement: 'dedicated' });
    await system.call(ref, 1, 30_000);
    return performance.now() - start;
  } finally {
    await system.shutdown();
  }
}

/** A fresh system's pool thread starting and running its first actor: the thread start as a user sees it. */
async function coldPooledSpawn() {
  const start = performance.now();
  const system = createActorSystem({ threads: 1 });
  try {
    const ref = await system.spawn(noop, undefined, { placement: 'pool' });
    await system.call(ref, 1, 30_000);
    return performance.now() - start;
  } finally {
    await system.shutdown();
  }
}

// One untimed round loads the runtime's modules into the main thread and warms the file cache.
await coldDedicatedSpawn();
await rawWorkerStart();
const results = { dedicated: [], pooled: [], raw: [] };
for (let i = 0; i < repeats; i++) {
  results.raw.push(await rawWorkerStart());
  results.dedicated.push(await coldDedicatedSpawn());
  results.pooled.push(await coldPooledSpawn());
}
console.log(JSON.stringify(results));
