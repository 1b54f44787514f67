// A process of the sharing benchmark (bench/sharing.ts), forked by it on the
// benchmark's data directory; it talks to the benchmark over the fork's IPC
// channel (see SharingChildMessage).
//
//   worker: a jobs app running `--handler` (noop or started-at) with
//           app.process, in its handler threads, or with `--run-in main`
//           as a plain function on its main thread; reports `ready` with its role, then (`--report
//           each`) each finished job,
//           or (`--report count`), when asked `count`, how many finishes
//           its scheduler reported; with `--warm-after N`, `warm` once its
//           scheduler has finished N jobs.
//   adder:  a jobs app that, told `go`, adds `--count` jobs `${prefix}${n}`,
//           `--window` adds in flight at a time; reports `added` with the
//           time it took.
//
// Every mode closes its app and exits when the benchmark sends `stop`.

import { parseArgs } from 'node:util';
import { startJobs } from 'jobtree';

export type SharingChildMessage =
  | { kind: 'ready'; role: 'owner' | 'client'; pid: number }
  | { kind: 'finished'; id: string }
  | { kind: 'added'; jobs: number; ms: number }
  | { kind: 'count'; jobs: number }
  | { kind: 'warm' }
  | { kind: 'progress'; jobs: number };

const { values } = parseArgs({
  options: {
    mode: { type: 'string' },
    path: { type: 'string' },
    type: { type: 'string' },
    handler: { type: 'string', default: 'noop' },
    'run-in': { type: 'string', default: 'threads' },
    report: { type: 'string', default: 'none' },
    'max-jobs': { type: 'string', default: '500' },
    threads: { type: 'string', default: '1' },
    'warm-after': { type: 'string', default: '0' },
    prefix: { type: 'string', default: 'j' },
    count: { type: 'string', default: '0' },
    window: { type: 'string', default: '64' },
  },
});
const send = (message: SharingChildMessage): void => {
  process.send?.(message);
};
const type = values.type!;
// The fleet's owner is one of these processes, and the benchmark counts its
// 100,000 finished jobs in the store at the end: more than the default retention keeps.
const app = await startJobs({ path: values.path!, threads: 1, logLevel: 'warn', retention: false });
process.on('message', (message) => {
  if (message === 'stop') void app.close().then(() => process.exit(0));
});
process.on('disconnect', () => void app.close().then(() => process.exit(0)));

if (values.mode === 'worker') {
  const definition =
    values.handler === 'started-at' ? (await import('../processors-fixtures/started-at.js')).default : (await import('../processors-fixtures/noop.js')).default;
  // A plain function runs on the main thread, as an application's own does by default.
  const handler = values['run-in'] === 'main' ? definition.run : definition;
  await app.setTypeTimeout(type, 60);
  await app.process(type, handler, { maxJobs: Number(values['max-jobs']), threads: Number(values.threads) });
  const events = app.scheduler.of(type)?.events;
  if (values.report === 'each') events?.on('job:finished', ({ id }) => send({ kind: 'finished', id }));
  const warmAfter = Number(values['warm-after']);
  if (warmAfter > 0) {
    let finished = 0;
    events?.on('job:finished', () => {
      if (++finished === warmAfter) send({ kind: 'warm' });
    });
  }
  if (values.report === 'count') {
    // Counted from before any job is added (the benchmark adds after `ready`).
    let finishes = 0;
    events?.on('job:finished', ({ state }) => {
      if (state === 'finished') finishes += 1;
    });
    process.on('message', (message) => message === 'count' && send({ kind: 'count', jobs: finishes }));
  }
  send({ kind: 'ready', role: app.role, pid: process.pid });
} else if (values.mode === 'adder') {
  send({ kind: 'ready', role: app.role, pid: process.pid });
  await new Promise<void>((resolve) => process.on('message', (message) => message === 'go' && resolve()));
  const count = Number(values.count);
  const window = Number(values.window);
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const n = next++;
      await app.add(type, `${values.prefix}${n}`);
      if ((n + 1) % 10_000 === 0) send({ kind: 'progress', jobs: n + 1 });
    }
  };
  await Promise.all(Array.from({ length: window }, lane));
  send({ kind: 'added', jobs: count, ms: performance.now() - started });
} else {
  throw new Error(`unknown mode ${String(values.mode)}`);
}
