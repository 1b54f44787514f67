// Retention's cost to the drain, run by `pnpm bench:retention`: the no-op
// drain (addMany / acceptMany(500) / completeMany) of N jobs on a store
// holding F finished jobs of another type, alone and while a pruner removes
// those (pruneFinished in batches of 500, one transaction each, paced as
// the app's pruner is: retention.maxRemovalsPerSecond, the default pace by
// default; RETENTION_BENCH_RATES=1000,Infinity adds one running its batches
// back to back). Target: the drain beside the paced pruner keeps >= 90% of
// its rate alone.
//
// On a shared machine a drain's rate moves by a factor of two from one run
// to the next, so the conditions are interleaved: each round runs the drain
// alone and beside each pruner, the order rotating by one between rounds
// (alone, beside; beside, alone; ...), and the result is the ratio of the
// medians over the rounds, with each round's own ratio (beside / alone of
// the same round) beside it. Every run starts on the same store: between
// runs (untimed) the drained jobs are pruned away, what the pruner removed
// is added and finished again so that F finished jobs wait, and the machine
// settles (`sync`, a short wait).
//
// Each run also reports the CPU time of this process (every thread, the
// pruner's work included) per drained job: on a machine other processes
// load, its ratio moves far less than the rates' do, and where the drain
// is bound by CPU a pruner that costs x% more CPU per drained job costs
// about x% of the rate.
//
//   RETENTION_BENCH_FINISHED  F, finished jobs to prune (default 50,000; 1000000 for the issue's figure)
//   RETENTION_BENCH_DRAIN     N, jobs per drain (default 20,000; 60,000 or more on a loaded machine)
//   RETENTION_BENCH_ROUNDS    rounds (default 5)
//   RETENTION_BENCH_RATES     the pruner's paces, removals a second (default: the app's default pace)
//
// The cost of the finish log itself (a row per write batch, written with
// or without a pruner) is measured by each checkout's own
// `bench/jobs.ts --drain`, run interleaved with one without it (CPU per
// 10,000 jobs).

import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openJobs } from '@jobtree/core';
import type { Jobs } from '@jobtree/core';
import { DEFAULT_MAX_REMOVALS_PER_SECOND, pruneDelayMs } from '../packages/jobtree/src/app/prune-pace.js';
import { formatNumber, formatTable } from './table.js';
import { badOption, benchOptions } from './bench-options.js';

// Settings come from the environment (above); the command line takes none.
const USAGE = `usage: [RETENTION_BENCH_FINISHED=F] [RETENTION_BENCH_DRAIN=N] [RETENTION_BENCH_ROUNDS=R] [RETENTION_BENCH_RATES=r1,r2] pnpm bench:retention
  RETENTION_BENCH_FINISHED  finished jobs to prune (default 50,000)
  RETENTION_BENCH_DRAIN     jobs per drain (default 20,000)
  RETENTION_BENCH_ROUNDS    rounds (default 5)
  RETENTION_BENCH_RATES     the pruner's paces, removals a second (default: the app's default pace)`;
benchOptions(USAGE, {});
const FINISHED = Number(process.env.RETENTION_BENCH_FINISHED ?? 50_000);
const DRAIN = Number(process.env.RETENTION_BENCH_DRAIN ?? 20_000);
const ROUNDS = Number(process.env.RETENTION_BENCH_ROUNDS ?? 5);
const RATES = (process.env.RETENTION_BENCH_RATES ?? String(DEFAULT_MAX_REMOVALS_PER_SECOND)).split(',').map(Number);
for (const [name, value] of [
  ['RETENTION_BENCH_FINISHED', FINISHED],
  ['RETENTION_BENCH_DRAIN', DRAIN],
  ['RETENTION_BENCH_ROUNDS', ROUNDS],
] as const) {
  if (!Number.isSafeInteger(value) || value < 1) badOption(USAGE, `${name} must be a positive integer, got ${process.env[name]}`);
}
for (const rate of RATES) if (!(rate > 0)) badOption(USAGE, `RETENTION_BENCH_RATES must be removals a second > 0 or Infinity, got ${process.env.RETENTION_BENCH_RATES}`);

const TYPE = 'bench';
const OLD = 'old';
const TARGET = 0.9;
/** Progress lines on a long phase at most this often. */
const PROGRESS_MS = 5_000;

const run = promisify(execFile);
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** Prints `what: stage done / total` every PROGRESS_MS while a long phase runs. */
class Progress {
  readonly #what: string;
  readonly #total: number;
  readonly #started = performance.now();
  #printed = performance.now();

  constructor(what: string, total: number) {
    this.#what = what;
    this.#total = total;
  }

  update(stage: 'added' | 'finished', done: number): void {
    const now = performance.now();
    if (now - this.#printed < PROGRESS_MS) return;
    this.#printed = now;
    const seconds = (now - this.#started) / 1000;
    console.log(`  ${this.#what}: ${stage} ${formatNumber(done)} of ${formatNumber(this.#total)} (${seconds.toFixed(0)} s so far; load ${load()})`);
  }
}

/** Adds `count` jobs of `type` (ids from `prefix`) and completes them all; resolves with jobs/s. */
async function drain(jobs: Jobs, type: string, prefix: string, count: number, progress?: Progress): Promise<number> {
  const started = performance.now();
  for (let at = 0; at < count; at += 1_000) {
    const size = Math.min(1_000, count - at);
    await jobs.addMany(
      type,
      Array.from({ length: size }, (_, index) => ({ id: `${prefix}${at + index}` })),
    );
    progress?.update('added', at + size);
  }
  let done = 0;
  const loop = async (): Promise<void> => {
    while (done < count) {
      const taken = await jobs.acceptMany(type, 500);
      if (taken.length === 0) break;
      await jobs.completeMany(taken.map((job) => ({ job })));
      done += taken.length;
      progress?.update('finished', done);
    }
  };
  await Promise.all([loop(), loop()]);
  return count / ((performance.now() - started) / 1000);
}

/** Removes every finished job of `type`, batches back to back (untimed). */
async function pruneAll(jobs: Jobs, type: string): Promise<number> {
  let removed = 0;
  for (let more = true; more; ) {
    const result = await jobs.pruneFinished(type, 'succeeded', { maxCount: 0 });
    removed += result.removed;
    more = result.more;
  }
  return removed;
}

/** The pruner as the app runs it (pruner.ts): a prune transaction, then the pause its pace asks for; until stopped or done. */
function startPruner(jobs: Jobs, rate: number): { stop(): Promise<number> } {
  let pruning = true;
  let removed = 0;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (pruning) {
      const started = performance.now();
      const result = await jobs.pruneFinished(OLD, 'succeeded', { maxCount: 0 });
      removed += result.removed;
      if (!result.more) break;
      const delay = pruneDelayMs(result.removed + result.indexed, performance.now() - started, rate);
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (delay > 0) setTimeout(resolve, delay);
        else setImmediate(resolve);
      });
    }
  })();
  return {
    async stop() {
      pruning = false;
      wake?.();
      await loop;
      return removed;
    },
  };
}

type Condition = { kind: 'alone' } | { kind: 'pruner'; rate: number };

const conditionLabel = (condition: Condition) =>
  condition.kind === 'alone'
    ? 'drain alone'
    : condition.rate === Number.POSITIVE_INFINITY
      ? 'beside the pruner, back to back'
      : `beside the pruner, ${formatNumber(condition.rate)}/s${condition.rate === DEFAULT_MAX_REMOVALS_PER_SECOND ? ' (default pace)' : ''}`;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Rotating the order gives each condition each position in turn: none always runs first after the cleanup, or last. */
function rotated<T>(items: readonly T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

interface Run {
  round: number;
  condition: Condition;
  perSecond: number;
  /** CPU microseconds of this process (drain and pruner) per drained job. */
  cpuPerJob: number;
  removed: number;
  prunedPerSecond: number;
  load: string;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-retention-'));
  const jobs = await openJobs({ path: dir });
  console.log(
    `retention bench: ${formatNumber(FINISHED)} finished jobs to prune, drains of ${formatNumber(DRAIN)} jobs, ${ROUNDS} rounds, ` +
      `paces ${RATES.map((rate) => (rate === Number.POSITIVE_INFINITY ? 'back to back' : `${formatNumber(rate)}/s`)).join(', ')}; load ${load()}`,
  );
  try {
    await jobs.setTypeTimeout(TYPE, 60);
    await jobs.setTypeTimeout(OLD, 60);
    const fillStarted = performance.now();
    await drain(jobs, OLD, 'f', FINISHED, new Progress('filling', FINISHED));
    console.log(`  filled in ${((performance.now() - fillStarted) / 1000).toFixed(0)} s`);
    let refills = 0;
    /** The store as every run finds it: F finished jobs of OLD, none of TYPE, written back to disk. */
    const reset = async (prunedOld: number) => {
      await pruneAll(jobs, TYPE);
      if (prunedOld > 0) await drain(jobs, OLD, `r${refills++}-`, prunedOld);
      await run('sync');
      await new Promise((resolve) => setTimeout(resolve, 100));
    };
    await drain(jobs, TYPE, 'w', Math.min(DRAIN, 5_000)); // warm-up
    await reset(0);

    const conditions: Condition[] = [{ kind: 'alone' }, ...RATES.map((rate): Condition => ({ kind: 'pruner', rate }))];
    const runs: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const condition of rotated(conditions, round)) {
        const prefix = `d${round}-${condition.kind === 'alone' ? 'a' : condition.rate}-`;
        const pruner = condition.kind === 'pruner' ? startPruner(jobs, condition.rate) : undefined;
        const started = performance.now();
        const cpu = process.cpuUsage();
        const perSecond = await drain(jobs, TYPE, prefix, DRAIN);
        const seconds = (performance.now() - started) / 1000;
        const removed = (await pruner?.stop()) ?? 0;
        const used = process.cpuUsage(cpu);
        const cpuPerJob = (used.user + used.system) / DRAIN;
        const measured: Run = { round, condition, perSecond, cpuPerJob, removed, prunedPerSecond: removed / seconds, load: load() };
        runs.push(measured);
        console.log(
          `  round ${round + 1}/${ROUNDS}, ${conditionLabel(condition)}: ${formatNumber(perSecond)} jobs/s, ${cpuPerJob.toFixed(0)} CPU µs/job` +
            `${pruner ? `, pruned ${formatNumber(removed)} (${formatNumber(measured.prunedPerSecond)}/s)` : ''}; load ${measured.load}`,
        );
        await reset(removed);
      }
    }

    const aloneOf = (round: number) => runs.find((r) => r.round === round && r.condition.kind === 'alone')?.perSecond ?? Number.NaN;
    console.log(
      `\n${formatTable(
        ['round', 'run', 'jobs/s', 'CPU µs/job', 'x alone (same round)', 'pruned meanwhile', 'pruned/s', 'load 1/5/15 min'],
        runs.map((r) => [
          r.round + 1,
          conditionLabel(r.condition),
          r.perSecond,
          Math.round(r.cpuPerJob),
          r.condition.kind === 'alone' ? '' : (r.perSecond / aloneOf(r.round)).toFixed(3),
          r.condition.kind === 'alone' ? '' : r.removed,
          r.condition.kind === 'alone' ? '' : Math.round(r.prunedPerSecond),
          r.load,
        ]),
      )}`,
    );
    const alone = runs.filter((r) => r.condition.kind === 'alone').map((r) => r.perSecond);
    const rows = RATES.map((rate) => {
      const beside = runs.filter((r) => r.condition.kind === 'pruner' && r.condition.rate === rate);
      const pairs = beside.map((r) => r.perSecond / aloneOf(r.round));
      const ratio = median(beside.map((r) => r.perSecond)) / median(alone);
      const paced = rate === DEFAULT_MAX_REMOVALS_PER_SECOND;
      const cpuRatio = median(beside.map((r) => r.cpuPerJob)) / median(runs.filter((r) => r.condition.kind === 'alone').map((r) => r.cpuPerJob));
      return [
        conditionLabel({ kind: 'pruner', rate }),
        median(alone),
        median(beside.map((r) => r.perSecond)),
        ratio.toFixed(3),
        (Math.max(...beside.map((r) => r.perSecond)) / Math.max(...alone)).toFixed(3),
        `${median(pairs).toFixed(3)} (${Math.min(...pairs).toFixed(3)}-${Math.max(...pairs).toFixed(3)})`,
        Math.round(median(beside.map((r) => r.prunedPerSecond))),
        cpuRatio.toFixed(3),
        paced ? (ratio >= TARGET ? 'met' : 'MISSED') : '-',
      ];
    });
    console.log(
      `\n${formatTable(
        ['pruner', 'alone, median jobs/s', 'beside, median jobs/s', 'ratio of medians', 'best rounds', 'per round: median (min-max)', 'pruned/s', 'CPU/job beside / alone', `>= ${TARGET}`],
        rows,
      )}`,
    );
    console.log(
      `${formatNumber(FINISHED)} finished jobs waiting at the start of every run; target: the drain beside the pruner at the default pace ` +
        `keeps >= ${TARGET} of its rate alone (ratio of the medians over ${ROUNDS} rounds); load ${load()}`,
    );
  } finally {
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
