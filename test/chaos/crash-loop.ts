// The kill -9 recovery loop: a loaded app (adds, workers, subscriptions) in
// a child process, killed with SIGKILL at a random moment, again and again
// on the same data directory. After each kill the store's invariants are
// checked; at the end a last child drains every job, and the whole history
// is checked: no acknowledged job lost, none finished twice, the jobs that
// were running at a kill re-enqueued and finished once.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkJobsConsistency, openDatabase, openJobs } from '@jobtree/core';
import { failureCounts, readHistory } from './history.js';
import { checkHistory, describeAnomaly, type HistoryAnomaly } from './history-checker.js';
import { Prng } from './prng.js';

export interface CrashLoopOptions {
  seed: number;
  kills: number;
  /** Jobs each loaded child adds. @default 60 */
  jobsPerRound?: number;
  progress?: (line: string) => void;
}

export interface CrashLoopResult {
  seed: number;
  kills: number;
  jobs: number;
  /** Jobs found running in the store right after a kill. */
  runningAtKill: number;
  /** Of those, the ones that ended finished exactly once. */
  runningAtKillFinished: number;
  storeChecks: number;
  historyLines: number;
  /** Calls answered with an error other than halt, by operation and code. */
  failures: Map<string, number>;
  anomalies: HistoryAnomaly[];
  descriptions: string[];
  elapsedMs: number;
}

/** The job type the crash loop's app runs. */
export const CRASH_TYPE = 'crash';
/** Subscriptions of round r are numbered from r * SUBS_PER_ROUND + 1. */
export const SUBS_PER_ROUND = 1_000_000;

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const started = Date.now();
  const { seed, kills } = options;
  const progress = options.progress ?? (() => {});
  const prng = new Prng(seed).fork('kill-moments');
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-crash-'));
  const path = join(dir, 'store');
  const historyPath = join(dir, 'history.jsonl');
  const anomalies: HistoryAnomaly[] = [];
  const runningAtKill = new Set<string>();
  let storeChecks = 0;
  const checkStore = async (when: string): Promise<void> => {
    const database = await openDatabase({ path });
    try {
      const report = await checkJobsConsistency(database);
      storeChecks += 1;
      for (const anomaly of report.anomalies) anomalies.push({ kind: anomaly.kind, type: anomaly.type, id: anomaly.id, detail: `${anomaly.detail} (${when})` });
      for (const job of report.running) runningAtKill.add(job.id);
    } finally {
      await database.close();
    }
  };
  const args = (round: number, mode: string) => ['--path', path, '--history', historyPath, '--seed', String(seed), '--round', String(round), '--mode', mode, '--jobs', String(options.jobsPerRound ?? 60)];

  let ok = false;
  try {
    for (let round = 0; round < kills; round++) {
      const child = startChild(args(round, 'load'));
      // Mostly a running app; now and then one still starting (opening the store, re-enqueueing, spawning threads).
      if (prng.chance(0.15)) await Promise.race([sleep(prng.between(200, 2_500)), child.exited]);
      else {
        await child.ready;
        await sleep(prng.between(100, 1_500));
      }
      child.process.kill('SIGKILL');
      await child.exited;
      await checkStore(`after kill ${round + 1}`);
      if ((round + 1) % 10 === 0) progress(`  ${round + 1}/${kills} kills, ${runningAtKill.size} jobs caught running so far`);
    }
    const drain = startChild(args(kills, 'drain'));
    await drain.ready;
    const code = await drain.exited;
    if (code !== 0) anomalies.push({ kind: 'not_finished', type: CRASH_TYPE, id: undefined, detail: `the draining child exited with ${code}: ${drain.output().slice(-2000)}` });
    await checkStore('after the drain');

    const jobs = await openJobs({ path });
    const infos = await jobs.getJobs(CRASH_TYPE).finally(() => jobs.close());
    // Subscriptions of killed children died with them: only the draining child's must have ended.
    const history = readHistory(historyPath).filter((entry) => entry.sub === undefined || entry.sub > kills * SUBS_PER_ROUND);
    anomalies.push(...checkHistory({ history, jobs: infos, drained: true }));
    const finished = new Set(infos.filter((job) => job.state === 'finished').map((job) => job.id));
    ok = anomalies.length === 0;
    return {
      seed,
      kills,
      jobs: infos.length,
      runningAtKill: runningAtKill.size,
      runningAtKillFinished: [...runningAtKill].filter((id) => finished.has(id)).length,
      storeChecks,
      historyLines: history.length,
      failures: failureCounts(history),
      anomalies,
      descriptions: anomalies.map((anomaly) => describeAnomaly(anomaly, history)),
      elapsedMs: Date.now() - started,
    };
  } finally {
    if (ok) await rm(dir, { recursive: true, force: true });
    else progress(`  kept the loop's store and history in ${dir}`);
  }
}

interface Child {
  process: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
  output(): string;
}

function startChild(args: string[]): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child did not start in 60 s: ${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the child exited with ${code} before it was ready: ${output}`));
    });
  });
  ready.catch(() => {});
  return { process: child, ready, exited, output: () => output };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
