// bench:actors — the actor runtime against raw worker_threads messaging,
// measured in the same run. `--quick` for a short run.
//
// - call round trip between actors on two host threads vs a raw MessageChannel
//   ping-pong between two threads (target <= 1.25x);
// - cast throughput vs raw postMessage in batches of 100 (target >= 0.5x);
// - spawn of a pooled actor (target <= 1 ms);
// - spawn of a dedicated actor vs a raw Worker start (target <= 1.2x);
// - cold starts (fresh system, no spare thread) of the built JavaScript and of
//   the TypeScript sources through tsx, vs a raw Worker start (reported).
//   The built runtime comes from `pnpm build` (the bench:actors script runs it).

import { MessageChannel, Worker } from 'node:worker_threads';
import { type ActorRef, createActorSystem } from '@jobtree/actors';
import benchActor, { type BenchMsg } from '../test/actors/fixtures/bench-actor.js';
import { coldStartRows } from './cold-start/measure.js';
import { type Cell, formatTable, RATIO_HEADER } from './table.js';
import { benchOptions } from './bench-options.js';

const USAGE = `usage: pnpm bench:actors [--quick]
  --quick          fewer round trips, casts, spawns and cold starts: a short run`;
const quick = benchOptions(USAGE, { quick: { type: 'boolean', default: false } }).quick === true;
const ROUND_TRIPS = quick ? 2_000 : 10_000;
const CASTS = quick ? 100_000 : 500_000;
const SPAWNS = quick ? 200 : 1_000;
const WORKER_STARTS = quick ? 3 : 6;
const REPEATS = quick ? 3 : 5;

// Raw baselines run plain JavaScript workers: the cost of worker_threads alone.
// One pair serves every run (warm, like the actors' threads): the main thread
// asks the driver for a run and gets the milliseconds it measured.
const RAW_PEER = `
const { parentPort } = require('node:worker_threads');
parentPort.once('message', ({ port, role }) => {
  if (role === 'peer') {
    let got = 0;
    let want = 0;
    port.on('message', (m) => {
      if (typeof m === 'number') port.postMessage(m);
      else if (m.expect !== undefined) { got = 0; want = m.expect; port.postMessage('ready'); }
      else { got += m.length; if (got === want) port.postMessage('done'); }
    });
    return;
  }
  parentPort.on('message', ({ run, n, batch }) => {
    const start = performance.now();
    if (run === 'ping') {
      let i = 0;
      port.onmessage = () => {
        if (++i === n) parentPort.postMessage(performance.now() - start);
        else port.postMessage(i);
      };
      port.postMessage(0);
    } else {
      port.onmessage = (event) => {
        if (event.data !== 'ready') return;
        const begin = performance.now();
        port.onmessage = () => parentPort.postMessage(performance.now() - begin);
        for (let i = 0; i < n; i += batch) {
          const items = [];
          for (let j = i; j < Math.min(n, i + batch); j++) items.push(j);
          port.postMessage(items);
        }
      };
      port.postMessage({ expect: n });
    }
  });
});`;

class RawPair {
  readonly #driver = new Worker(RAW_PEER, { eval: true });
  readonly #peer = new Worker(RAW_PEER, { eval: true });

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.#peer.postMessage({ port: port2, role: 'peer' }, [port2]);
    this.#driver.postMessage({ port: port1, role: 'driver' }, [port1]);
  }

  run(run: 'ping' | 'cast', n: number): Promise<number> {
    const elapsed = new Promise<number>((resolve) => this.#driver.once('message', resolve));
    this.#driver.postMessage({ run, n, batch: 100 });
    return elapsed;
  }

  async close(): Promise<void> {
    await Promise.all([this.#driver.terminate(), this.#peer.terminate()]);
  }
}

async function rawWorkerStart(): Promise<number> {
  const start = performance.now();
  const worker = new Worker(`require('node:worker_threads').parentPort.postMessage('up')`, { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  const ms = performance.now() - start;
  await worker.terminate();
  return ms;
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function repeat<T>(repeats: number, measure: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < repeats; i++) results.push(await measure());
  return results;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const system = createActorSystem({ threads: 2 });
const rawPair = new RawPair();
const rows: Cell[][] = [];
const lowerIsBetter = (metric: string, value: number, baseline: number, target: number, ratio = value / baseline): Cell[] => {
  return [metric, value, baseline, Number(ratio.toPrecision(3)), `<= ${target}`, ratio <= target ? 'pass' : 'FAIL'];
};
const higherIsBetter = (metric: string, value: number, baseline: number, target: number, ratio = value / baseline): Cell[] => {
  return [metric, value, baseline, Number(ratio.toPrecision(3)), `>= ${target}`, ratio >= target ? 'pass' : 'FAIL'];
};
/**
 * The median of the ratios of interleaved runs (numerator[i] / denominator[i]):
 * on a shared machine the load drifts between runs, and a pair run back to
 * back sees about the same load, so this is steadier than a ratio of medians.
 */
function pairedRatio(numerator: number[], denominator: number[]): number {
  return median(numerator.map((value, i) => value / (denominator[i] as number)));
}

try {
  const a = await system.spawn(benchActor, undefined);
  let b: ActorRef<BenchMsg> = await system.spawn(benchActor, undefined);
  while (system.threadOf(b) === system.threadOf(a)) b = await system.spawn(benchActor, undefined);

  // Warm both sides (JIT, tsx caches), then take the median of several runs.
  // Warm up both sides until the JIT has settled (the first thousands of calls run slower).
  for (let i = 0; i < 3; i++) {
    await system.call(a, { op: 'pingLoop', to: b.id, n: 3_000 });
    await rawPair.run('ping', 3_000);
  }
  // Interleaved, so that both sides see the same machine load.
  const ours: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    ours.push(await system.call<number>(a, { op: 'pingLoop', to: b.id, n: ROUND_TRIPS }, 120_000));
    raw.push(await rawPair.run('ping', ROUND_TRIPS));
  }
  rows.push(
    lowerIsBetter('call round trip, two host threads (µs)', (median(ours) * 1000) / ROUND_TRIPS, (median(raw) * 1000) / ROUND_TRIPS, 1.25, pairedRatio(ours, raw)),
  );

  for (let i = 0; i < 3; i++) {
    await system.call(a, { op: 'castLoop', to: b.id, n: 50_000 });
    await rawPair.run('cast', 50_000);
  }
  const oursCast: number[] = [];
  const rawCast: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    oursCast.push(await system.call<number>(a, { op: 'castLoop', to: b.id, n: CASTS }, 120_000));
    rawCast.push(await rawPair.run('cast', CASTS));
  }
  rows.push(
    higherIsBetter(
      'cast throughput (msgs/s) vs batches of 100',
      CASTS / (median(oursCast) / 1000),
      CASTS / (median(rawCast) / 1000),
      0.5,
      pairedRatio(rawCast, oursCast),
    ),
  );

  for (let i = 0; i < 50; i++) await system.spawn(benchActor, undefined);
  const spawnStart = performance.now();
  for (let i = 0; i < SPAWNS; i++) await system.spawn(benchActor, undefined);
  const spawnMs = (performance.now() - spawnStart) / SPAWNS;
  rows.push(lowerIsBetter('spawn of a pooled actor (ms) vs 1 ms', spawnMs, 1, 1));

  // Dedicated: the first one starts a thread cold (and a spare); later ones take the spare.
  const coldStart = performance.now();
  const first = await system.spawn(benchActor, undefined, { placement: 'dedicated' });
  const coldMs = performance.now() - coldStart;
  system.kill(first);
  const dedicated: number[] = [];
  for (let i = 0; i < WORKER_STARTS; i++) {
    await sleep(quick ? 800 : 1200); // lets the spare finish starting, as between real-world spawns
    const start = performance.now();
    const ref = await system.spawn(benchActor, undefined, { placement: 'dedicated' });
    dedicated.push(performance.now() - start);
    system.kill(ref);
  }
  const rawStarts = await repeat(WORKER_STARTS, rawWorkerStart);
  rows.push(lowerIsBetter('spawn of a dedicated actor (ms) vs raw Worker start', median(dedicated), median(rawStarts), 1.2));
  rows.push([
    'first dedicated spawn, cold thread with tsx (ms)',
    coldMs,
    median(rawStarts),
    Number((coldMs / median(rawStarts)).toPrecision(3)),
    '-',
    'info',
  ]);
} finally {
  await Promise.all([system.shutdown(), rawPair.close()]);
}
rows.push(...(await coldStartRows(WORKER_STARTS)));

console.log(`bench:actors${quick ? ' --quick' : ''} (Node ${process.version}; medians of ${REPEATS} interleaved runs, ratio = median of paired ratios)\n`);
console.log(formatTable(RATIO_HEADER, rows));
