// What watching an app costs it: the app's job rate (add -> accept -> finish
// cycles/s through its jobs handle, 8 concurrent workers on the main thread)
// while 100 clients follow its server-sent events, as a ratio of the rate
// with none, measured in the same run. The clients run in a child process
// (as browsers would, elsewhere), each reading every event. Rounds alternate
// the order of the two phases; the ratio is the median of per-round ratios. Target: the
// rate with 100 clients >= 0.9x the rate without.
//
//   pnpm bench:admin [--quick]

import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startJobs } from 'jobtree';
import { formatTable } from './table.js';
import { benchOptions } from './bench-options.js';

const USAGE = `usage: pnpm bench:admin [--quick]
  --quick          2 rounds of 3 s phases instead of 4 of 6 s`;
/** The argument of the benchmark's own child process (the clients): it reads no other option. */
const CLIENTS_FLAG = '--sse-clients';

if (process.argv.includes(CLIENTS_FLAG)) {
  await runClients(process.argv[process.argv.indexOf(CLIENTS_FLAG) + 1] ?? '', Number(process.argv[process.argv.indexOf(CLIENTS_FLAG) + 2] ?? 0));
} else {
  await main();
}

async function main(): Promise<void> {
  const quick = benchOptions(USAGE, { quick: { type: 'boolean', default: false } }).quick === true;
  const ROUNDS = quick ? 2 : 4;
  const PHASE_MS = quick ? 3_000 : 6_000;
  const CLIENTS = 100;
  const WORKERS = 8;
  const TARGET = 0.9;
  const TYPE = 'bench';

  const dir = mkdtempSync(join(tmpdir(), 'jobtree-bench-admin-'));
  const app = await startJobs({ path: dir, admin: { port: 0 }, logLevel: 'silent' });
  const admin = app.admin;
  if (admin === undefined) throw new Error('no admin endpoint');
  await app.setTypeTimeout(TYPE, 60);
  let serial = 0;

  /** Cycles per second for `ms`, with WORKERS concurrent add -> accept -> finish loops. */
  async function rate(ms: number): Promise<number> {
    let done = 0;
    const until = performance.now() + ms;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        while (performance.now() < until) {
          await app.add(TYPE, `job-${++serial}`, { n: serial });
          const job = await app.accept(TYPE, { timeout: 1_000 });
          if (job === undefined) continue;
          await app.finish(job, { ok: true });
          done += 1;
        }
      }),
    );
    return done / ((performance.now() - began) / 1000);
  }

  const rows: (string | number)[][] = [];
  const ratios: number[] = [];
  try {
    await rate(1_000); // warm-up
    for (let round = 1; round <= ROUNDS; round++) {
      // Odd rounds measure without clients first, even rounds with: a drift in the machine's load
      // (or the store growing) then favours neither phase.
      let without = 0;
      if (round % 2 === 1) without = await rate(PHASE_MS);
      const clients = await startClients(admin.url, CLIENTS);
      const withClients = await rate(PHASE_MS);
      const received = await stopClients(clients);
      if (round % 2 === 0) without = await rate(PHASE_MS);
      ratios.push(withClients / without);
      rows.push([`round ${round}`, without, withClients, withClients / without, received.connected, received.events]);
    }
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)] ?? 0;
  console.log(`app job rate (add -> accept -> finish cycles/s, ${WORKERS} workers) with ${CLIENTS} SSE clients vs none, ${ROUNDS} rounds of ${PHASE_MS / 1000} s`);
  console.log(formatTable(['phase', 'no clients /s', `${CLIENTS} clients /s`, 'ratio', 'clients connected', 'events received'], rows));
  console.log(`\nmedian ratio ${median.toFixed(3)} (target >= ${TARGET}): ${median >= TARGET ? 'PASS' : 'FAIL'}`);
  if (median < TARGET) process.exitCode = 1;
}

interface ClientReport {
  connected: number;
  events: number;
}

/** Forks this file in client mode and resolves once every client is connected. */
function startClients(url: string, count: number): Promise<ChildProcess> {
  const child = fork(fileURLToPath(import.meta.url), [CLIENTS_FLAG, url, String(count)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the SSE clients exited (${code}) before connecting`)));
  });
}

function stopClients(child: ChildProcess): Promise<ClientReport> {
  return new Promise((resolve) => {
    child.once('message', (report) => {
      child.removeAllListeners('exit');
      resolve(report as ClientReport);
    });
    child.send('stop');
  });
}

/** Client mode: `count` SSE connections reading every event; reports when connected and when told to stop. */
async function runClients(url: string, count: number): Promise<void> {
  let events = 0;
  let connected = 0;
  const requests = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof get>>((resolve, reject) => {
          const req = get(`${url}/api/events`, (res) => {
            connected += 1;
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              events += chunk.split('\n\n').length - 1;
            });
            resolve(req);
          });
          req.on('error', reject);
        }),
    ),
  );
  process.send?.('connected');
  process.once('message', () => {
    for (const req of requests) req.destroy();
    process.send?.({ connected, events }, () => process.exit(0));
  });
}
