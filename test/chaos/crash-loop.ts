// The kill -9 recovery loop: a loaded app (adds, workers, subscriptions) in
// a child process, killed with SIGKILL at a random moment, again and again
// on the same data directory. In some rounds (`kill_owner_with_clients`)
// the killed app owns a store that other loaded apps share as its clients:
// they outlive it, one takes the store over, they carry on for a while, and
// then they stop cleanly, so that their subscriptions are checked too.
// After each round the store's invariants are checked; at the end a last
// child drains every job, and the whole history is checked: no
// acknowledged job lost, none finished twice, the jobs that were running at
// a kill re-enqueued and finished once, no subscription of a process that
// was not killed left hanging.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkJobsConsistency, openDatabase, openJobs } from '@jobtree/core';
import { failureCounts, readHistory } from './history.js';
import { checkHistory, describeAnomaly, type HistoryAnomaly } from './history-checker.js';
import { Prng } from './prng.js';

/** What one round of the loop kills. */
export type CrashFaultKind =
  /** kill -9 of the loaded app, alone on its store. */
  | 'kill_process'
  /** kill -9 of the loaded app while other loaded apps are clients of its store: they carry on, one takes the store over. */
  | 'kill_owner_with_clients';

export const CRASH_FAULT_KINDS: readonly CrashFaultKind[] = ['kill_process', 'kill_owner_with_clients'];

export interface CrashLoopOptions {
  seed: number;
  kills: number;
  /** Kinds never drawn. @default none */
  exclude?: readonly CrashFaultKind[];
  /**
   * How many rounds are `kill_owner_with_clients` (which rounds is drawn
   * from the seed). @default each round is one with chance 0.2
   */
  ownerWithClients?: number;
  /** Jobs each loaded child adds. @default 60 */
  jobsPerRound?: number;
  progress?: (line: string) => void;
}

export interface CrashLoopResult {
  seed: number;
  kills: number;
  /** Rounds by kind. */
  kinds: Map<CrashFaultKind, number>;
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
/** The clients of a `kill_owner_with_clients` round. */
const CLIENTS = 2;
/** The share of rounds that kill an owner with clients (when neither kind is excluded). */
const OWNER_WITH_CLIENTS_SHARE = 0.2;
/** How long the clients have for a new owner to take over, and then to stop cleanly. */
const TAKEOVER_MS = 30_000;
const CLIENT_STOP_MS = 60_000;

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const started = Date.now();
  const { seed, kills } = options;
  const progress = options.progress ?? (() => {});
  const prng = new Prng(seed).fork('kill-moments');
  const kindOf = kindsOfRounds(seed, kills, options.exclude ?? [], options.ownerWithClients);
  const kinds = new Map<CrashFaultKind, number>();
  let clientsStarted = 0;
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
      const kind = kindOf[round]!;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      if (kind === 'kill_owner_with_clients') {
        // Subscriptions of the clients are numbered above every round's and the drain's: they are all checked.
        const subsFrom = () => (kills + 1 + clientsStarted++) * SUBS_PER_ROUND + 1;
        const clientArgs = (c: number) => [...args(round, 'load'), '--client', String(c), '--subs-from', String(subsFrom())];
        anomalies.push(...(await killOwnerWithClients(round, prng, () => startChild(args(round, 'load')), (c) => startChild(clientArgs(c)))));
        await checkStore(`after the owner's kill with clients, round ${round + 1}`);
        if ((round + 1) % 10 === 0) progress(`  ${round + 1}/${kills} kills, ${runningAtKill.size} jobs caught running so far`);
        continue;
      }
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
      kinds,
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

/**
 * One `kill_owner_with_clients` round: an owner and its clients, all
 * loaded; the owner killed with SIGKILL; a client must take the store over
 * within TAKEOVER_MS, and, after a while of load, every client must stop
 * cleanly on SIGTERM (its subscriptions settled) within CLIENT_STOP_MS.
 */
async function killOwnerWithClients(round: number, prng: Prng, startOwner: () => Child, startClient: (c: number) => Child): Promise<HistoryAnomaly[]> {
  const anomalies: HistoryAnomaly[] = [];
  const at = `round ${round + 1}`;
  const owner = startOwner();
  await owner.ready;
  const clients = Array.from({ length: CLIENTS }, (_, c) => startClient(c));
  try {
    await Promise.all(clients.map((client) => client.ready));
    for (const client of clients) {
      if (client.role() !== 'client') anomalies.push({ kind: 'no_new_owner', type: CRASH_TYPE, id: undefined, detail: `${at}: a process started while the store was owned is its ${client.role()}` });
    }
    await sleep(prng.between(100, 1_500));
    owner.process.kill('SIGKILL');
    await owner.exited;
    const tookOver = await within(Promise.any(clients.map((client) => client.tookOver)).then(() => true), TAKEOVER_MS, false);
    if (!tookOver) anomalies.push({ kind: 'no_new_owner', type: CRASH_TYPE, id: undefined, detail: `${at}: no client took the store over within ${TAKEOVER_MS} ms of the owner's kill` });
    await sleep(prng.between(300, 1_500));
  } finally {
    // The owner is dead by now, unless something failed before its kill.
    owner.process.kill('SIGKILL');
    await owner.exited;
    for (const client of clients) client.process.kill('SIGTERM');
    for (const client of clients) {
      const code = await within(client.exited, CLIENT_STOP_MS, 'stuck' as const);
      if (code === 0) continue;
      if (code === 'stuck') client.process.kill('SIGKILL');
      await client.exited;
      anomalies.push({
        kind: 'client_stuck',
        type: CRASH_TYPE,
        id: undefined,
        detail: `${at}: a client that outlived its owner did not stop cleanly (${code === 'stuck' ? `still running ${CLIENT_STOP_MS} ms after SIGTERM` : `exit code ${code}`}): ${client.output().slice(-2000)}`,
      });
    }
  }
  return anomalies;
}

/** The kind of each round, from the seed alone (and `count`, the rounds that kill an owner with clients, when given). */
function kindsOfRounds(seed: number, kills: number, exclude: readonly CrashFaultKind[], count?: number): CrashFaultKind[] {
  const prng = new Prng(seed).fork('crash-kinds');
  const allowed = CRASH_FAULT_KINDS.filter((kind) => !exclude.includes(kind));
  if (allowed.length === 0) throw new Error('every kind of crash-loop fault is excluded');
  if (count !== undefined && allowed.length === 2) {
    const rounds = Array.from({ length: kills }, (_, round) => round);
    const chosen = new Set<number>();
    while (chosen.size < Math.min(count, kills)) chosen.add(rounds[prng.int(kills)]!);
    return rounds.map((round) => (chosen.has(round) ? 'kill_owner_with_clients' : 'kill_process'));
  }
  return Array.from({ length: kills }, () => {
    if (allowed.length === 1) return allowed[0]!;
    return prng.chance(OWNER_WITH_CLIENTS_SHARE) ? 'kill_owner_with_clients' : 'kill_process';
  });
}

interface Child {
  process: ChildProcess;
  ready: Promise<void>;
  /** Settles once the child, a client, has taken the store over (never for the owner). */
  tookOver: Promise<void>;
  /** The role it printed once its store was open ('' before). */
  role(): string;
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
  const tookOver = new Promise<void>((resolve) => {
    child.stdout!.on('data', () => {
      if (output.includes('took over\n')) resolve();
    });
  });
  const role = (): string => /^role (\w+)$/m.exec(output)?.[1] ?? '';
  return { process: child, ready, tookOver, role, exited, output: () => output };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What `promise` settles to, or `timedOut` after `ms` (the timer cleared either way). */
async function within<T, U>(promise: Promise<T>, ms: number, timedOut: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<U>((resolve) => {
        timer = setTimeout(() => resolve(timedOut), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
