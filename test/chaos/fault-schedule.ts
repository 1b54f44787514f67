// The schedule of faults of a chaos run, made from its seed alone: which
// fault, at which moment of the run, against what. The same seed and sizes
// give the same schedule (what the faults then hit — which job a worker held,
// which transaction an armed storage fault lands on — depends on timing).

import { Prng } from './prng.js';

export type FaultKind =
  /** Kill a job-processing actor (its supervisor restarts it). */
  | 'kill_worker_actor'
  /** Crash a main-thread worker while it may hold a job (a new one takes its place). */
  | 'crash_main_worker'
  /** Kill a system actor of the jobs tree by its name. */
  | 'kill_system'
  /** Make a worker actor loop synchronously, then kill it: its host thread is terminated after the kill timeout. */
  | 'stall_thread'
  /** The next attempts fail with not_committed (1020). */
  | 'storage_conflict'
  /** The next attempts fail with transaction_too_old (1007). */
  | 'storage_too_old'
  /** The next commits succeed but their bodies run again, as after commit_unknown_result (1021). */
  | 'storage_unknown_result'
  /** A processor job whose handler loops synchronously on its first run: the scheduler terminates its thread. */
  | 'stall_handler'
  /** A processor job whose handler throws on its first run. */
  | 'crash_handler'
  /** Kill the processor actor (`processor:<type>`): its handlers are cut off, its jobs go back, user_sup starts a new one. */
  | 'kill_processor';

export interface Fault {
  /** Milliseconds from the start of the fault phase. */
  atMs: number;
  kind: FaultKind;
  /** A worker's index, a system actor's name, or how many attempts fail. */
  target: string;
}

export interface ScheduleOptions {
  seed: number;
  faults: number;
  everyMs: number;
  workerActors: number;
  mainWorkers: number;
  /** Whether a scheduler runs handlers (else no handler faults). */
  processors: boolean;
  /** Job types: the per-type actors of each are targets. */
  types: readonly string[];
  /**
   * The least time between two faults that restart a child of the root: the
   * root allows 3 restarts in 10 s, and faults are not meant to exhaust it.
   */
  rootGapMs: number;
  /** Kinds never drawn. */
  exclude?: readonly FaultKind[];
  /** System actors never killed (names as `systemTargets` gives them). */
  spare?: readonly string[];
}

/** Faults that make the root restart one of its children (a system kill; a thread termination that takes per-type actors along). */
export const ROOT_FAULTS: ReadonlySet<FaultKind> = new Set(['kill_system', 'stall_thread']);

const WEIGHTS: Record<FaultKind, number> = {
  kill_worker_actor: 25,
  crash_main_worker: 10,
  kill_system: 20,
  stall_thread: 8,
  storage_conflict: 25,
  storage_too_old: 12,
  storage_unknown_result: 8,
  stall_handler: 4,
  crash_handler: 4,
  kill_processor: 3,
};

/** Every kind of fault the schedule can draw. */
export const FAULT_KINDS = Object.keys(WEIGHTS) as readonly FaultKind[];

export function systemTargets(types: readonly string[]): string[] {
  const perType = types.flatMap((type) => [`activity_monitor:${type}`, `notifier:${type}`, `type_monitor:${type}`]);
  return ['core', 'user_sup', 'activity_monitor_sup', 'notifier_sup', 'jobs_server', ...perType];
}

export function makeSchedule(options: ScheduleOptions): Fault[] {
  const prng = new Prng(options.seed).fork('schedule');
  const targets = systemTargets(options.types).filter((name) => !(options.spare ?? []).includes(name));
  // System targets in a rotation from a random start: every kind is hit once before any twice.
  let nextTarget = prng.int(targets.length);
  const excluded = new Set<FaultKind>(options.exclude ?? []);
  if (!options.processors) excluded.add('stall_handler').add('crash_handler').add('kill_processor');
  if (targets.length === 0) excluded.add('kill_system');
  const weights = Object.fromEntries(Object.entries(WEIGHTS).filter(([kind]) => !excluded.has(kind as FaultKind))) as Record<FaultKind, number>;
  const local = Object.fromEntries(Object.entries(weights).filter(([kind]) => !ROOT_FAULTS.has(kind as FaultKind))) as Record<FaultKind, number>;
  let lastRoot = Number.NEGATIVE_INFINITY;
  const faults: Fault[] = [];
  for (let i = 0; i < options.faults; i++) {
    const atMs = i * options.everyMs;
    let kind = prng.weighted(weights);
    if (ROOT_FAULTS.has(kind) && atMs - lastRoot < options.rootGapMs) kind = prng.weighted(local);
    if (kind === 'crash_main_worker' && options.mainWorkers === 0) kind = 'kill_worker_actor';
    if (ROOT_FAULTS.has(kind)) lastRoot = atMs;
    let target: string;
    if (kind === 'kill_system') {
      target = targets[nextTarget % targets.length]!;
      nextTarget += 1;
    } else if (kind === 'kill_worker_actor' || kind === 'stall_thread') {
      target = String(prng.int(options.workerActors));
    } else if (kind === 'crash_main_worker') {
      target = String(prng.int(options.mainWorkers));
    } else if (kind === 'stall_handler' || kind === 'crash_handler') {
      target = `${kind}-${i}`;
    } else if (kind === 'kill_processor') {
      target = 'processor';
    } else {
      target = String(prng.between(1, 3));
    }
    faults.push({ atMs, kind, target });
  }
  return faults;
}
