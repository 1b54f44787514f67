// `jobtree demo`: a jobs app with its admin endpoint, jobs flowing through
// main-thread workers, and (with --kill-every) an actor killed now and then,
// so that the dashboard and the other commands have something live to show.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { JobsError } from '@jobtree/core';
import { type JobsApp, startJobs } from '../app/jobs-app.js';

export interface DemoOptions {
  path: string | undefined;
  port: number;
  seconds: number | undefined;
  killEvery: number | undefined;
  workers: number;
  log: (line: string) => void;
  /** Resolves when the demo should stop early (Ctrl-C). */
  stopSignal: Promise<void>;
}

const TYPES = ['email', 'thumbnail'];
/**
 * Every kill costs jobs_sup one restart (of jobs_server, or of notifier_sup
 * and jobs_server), and jobs_sup allows 3 in 10 s: a fourth stops the app.
 * Kills at least this far apart keep it at 3 in any 10 s.
 */
const MIN_KILL_SPACING_MS = 3_500;

export async function runDemo(options: DemoOptions): Promise<void> {
  const temporary = options.path === undefined;
  const path = options.path === undefined ? mkdtempSync(join(tmpdir(), 'jobtree-demo-')) : resolve(options.path);
  const app = await startJobs({ path, admin: { port: options.port } });
  let stopping = false;
  const loops: Promise<void>[] = [];
  let progress: NodeJS.Timeout | undefined;
  try {
    for (const type of TYPES) await app.setTypeTimeout(type, 10);
    const admin = app.admin;
    if (admin === undefined) throw new Error('the admin endpoint did not start');
    options.log(`demo app on ${path}`);
    options.log(`dashboard: ${admin.url}/#token=${encodeURIComponent(admin.token)}`);
    options.log(`try: jobtree status --path ${path}`);
    let added = 0;
    let finished = 0;
    loops.push(
      (async () => {
        while (!stopping) {
          const type = TYPES[added % TYPES.length] as string;
          added += 1;
          await app.add(type, `${type}-${added}`, { n: added, at: new Date().toISOString() }, { priority: added % 3 });
          await sleep(150 + Math.random() * 250);
        }
      })(),
    );
    for (let i = 0; i < options.workers; i++) {
      const type = TYPES[i % TYPES.length] as string;
      loops.push(
        (async () => {
          while (!stopping) {
            const job = await app.accept(type, { timeout: 500 });
            if (job === undefined) continue;
            try {
              await sleep(200 + Math.random() * 600);
              const current = await app.update(job, { ...(job.data as object), progress: 0.5 });
              await sleep(100 + Math.random() * 300);
              await app.finish(current, { ...(job.data as object), progress: 1, done: new Date().toISOString() });
              finished += 1;
            } catch (error) {
              if (!JobsError.is(error, 'halt') && !JobsError.is(error, 'closed')) throw error;
            }
          }
        })(),
      );
    }
    if (options.killEvery !== undefined) {
      const everyMs = Math.max(options.killEvery * 1000, MIN_KILL_SPACING_MS);
      if (everyMs > options.killEvery * 1000) options.log(`killing every ${everyMs / 1000} s: jobs_sup allows 3 restarts in 10 s, and a fourth would stop the app`);
      loops.push(killNow(app, everyMs, () => stopping, options.log));
    }
    progress = setInterval(() => options.log(`added ${added}, finished ${finished}`), 5_000);
    const timeUp = options.seconds === undefined ? new Promise<void>(() => {}) : sleep(options.seconds * 1000);
    await Promise.race([timeUp, options.stopSignal, ...loops]);
    options.log(`stopping: added ${added}, finished ${finished}`);
  } finally {
    clearInterval(progress);
    stopping = true;
    await Promise.allSettled(loops);
    await app.close();
    if (temporary) rmSync(path, { recursive: true, force: true });
  }
}

async function killNow(app: JobsApp, everyMs: number, stopped: () => boolean, log: (line: string) => void): Promise<void> {
  const victims = [...TYPES.flatMap((type) => [`notifier:${type}`, `activity_monitor:${type}`]), 'notifier_sup'];
  let round = 0;
  while (!stopped()) {
    await sleep(everyMs);
    if (stopped()) return;
    const name = victims[round++ % victims.length] as string;
    if (app.system.whereis(name) === undefined) continue;
    log(`killing ${name}`);
    await app.system.kill(name);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
