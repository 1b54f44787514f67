// What every command asks of "the jobs of a data directory": a running app
// (over its admin endpoint) or, when none runs, the store opened directly.
// Both answer with the same plain shapes, which `--json` prints as they are.

import type { AddOptions, FlowNode, JobInfo, JobOutcome, JobState, JsonValue, TypeLimits } from '@jobtree/core';
import type { JobTotals } from '../admin/job-activity.js';
import type { TypeQueue } from '../admin/queue-sampler.js';
import type { ScheduleInfo } from '../app/app-schedules.js';
import type { TreeNode } from '../app/live-tree.js';

export interface TypeView extends TypeQueue {
  /** Whether the type is paused (no process starts its jobs). */
  paused: boolean;
  /** Totals since the app started; null when read from a closed store. */
  totals: JobTotals | null;
}

/** The job types, as `GET /api/types` answers them (and `types --json` prints them). */
export interface TypesView {
  /** Epoch ms when the counts were read. */
  at: number;
  types: TypeView[];
}

/** The schedules, as `GET /api/schedules` answers them (and `schedules --json` prints them). */
export interface SchedulesView {
  /** Epoch ms when they were read. */
  at: number;
  schedules: ScheduleInfo[];
}

export interface StatusView {
  /** Whether a running app answered (false: the store was opened directly). */
  running: boolean;
  url: string | null;
  pid: number | null;
  uptimeMs: number | null;
  /** Epoch ms when this was read. */
  now: number;
  threads: number[] | null;
  tree: TreeNode | null;
  /** Whether the app runs a scheduler (job processors). */
  scheduler: boolean;
}

export interface JobsView {
  type: string;
  state: JobState | null;
  /** Only the finished jobs that ended so; null for every job. */
  outcome: JobOutcome | null;
  offset: number;
  limit: number;
  total: number;
  jobs: JobInfo[];
}

/** A job, with its scheduler summary (`_scheduler/jobs` entry) when a scheduler runs it. */
export type JobView = JobInfo & { scheduler: unknown };

export interface SchedulerReport {
  running: boolean;
  stats: unknown;
  jobs: unknown;
}

export interface KillReport {
  name: string;
  killed: string;
  replacement: string | null;
}

export interface Backend {
  /** `app`: a running app's endpoint; `store`: the store opened by this command. */
  readonly kind: 'app' | 'store';
  status(): Promise<StatusView>;
  types(): Promise<TypesView>;
  /** `outcome`: only the finished jobs that ended so; `offset`: how many of the matching jobs to skip (the next page). */
  jobs(type: string, state: JobState | undefined, limit: number, outcome?: JobOutcome, offset?: number): Promise<JobsView>;
  job(type: string, id: string): Promise<JobView>;
  /** The flow under a job (`GET /api/flows/:type/:id`); `not_found` for a job in no flow. */
  flow(type: string, id: string): Promise<FlowNode>;
  add(type: string, id: string, data: JsonValue, options: AddOptions): Promise<{ type: string; id: string; state: JobState }>;
  remove(type: string, id: string): Promise<{ type: string; id: string; removed: boolean }>;
  /** Runs a failed or cancelled job again with its input (`not_retryable` for any other). */
  retry(type: string, id: string): Promise<{ type: string; id: string; state: 'pending' }>;
  /** Ends a pending or running job as cancelled; `cancelled` false when it had ended already. */
  cancel(type: string, id: string): Promise<{ type: string; id: string; cancelled: boolean }>;
  /** `seconds` undefined clears the timeout. */
  setTimeout(type: string, seconds: number | undefined): Promise<{ type: string; timeout: number | null }>;
  /** A type's limits (`GET /api/types/:type/limits`); null when it has none. */
  limits(type: string): Promise<{ type: string; limits: TypeLimits | null }>;
  schedules(): Promise<SchedulesView>;
  /** Pauses (`paused` true) or resumes a type. */
  setPaused(type: string, paused: boolean): Promise<{ type: string; paused: boolean }>;
  scheduler(): Promise<SchedulerReport>;
  kill(name: string): Promise<KillReport>;
  /** The dashboard's URL, with the token in its fragment when known. */
  dashboardUrl(): string;
  /**
   * A URL for a browser to open, safe on a command line: with a single-use
   * code the endpoint trades for a session, never the token (plain when no
   * token is known).
   */
  dashboardOpenUrl(): Promise<string>;
  close(): Promise<void>;
}
