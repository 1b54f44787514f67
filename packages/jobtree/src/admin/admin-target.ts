// What the admin endpoint needs of a jobs app, by shape (the app passes
// itself), so that the endpoint does not depend on the app's module.

import type { AddOptions, FlowNode, JobInfo, JobsFilter, JobState, JsonValue, PausedType, ScheduleSpec, TypeLimits } from '@jobtree/core';
import type { ScheduleInfo, ScheduleOptions } from '../app/app-schedules.js';
import type { TreeNode } from '../app/live-tree.js';
import { type SchedulerView, schedulerOf } from './scheduler-view.js';

export interface AdminTarget {
  getTypes(): Promise<string[]>;
  getTypeTimeout(type: string): Promise<number | undefined>;
  setTypeTimeout(type: string, seconds: number): Promise<void>;
  clearTypeTimeout(type: string): Promise<void>;
  /** A type's limits (read-only here): an app that has none to show leaves it out. */
  getLimits?(type: string): Promise<TypeLimits | undefined>;
  pause(type: string): Promise<void>;
  resume(type: string): Promise<void>;
  getPausedTypes(): Promise<PausedType[]>;
  schedules(): Promise<ScheduleInfo[]>;
  schedule(name: string, spec: string | ScheduleSpec, options: ScheduleOptions): Promise<ScheduleInfo>;
  unschedule(name: string): Promise<boolean>;
  getJob(type: string, id: string): Promise<JobInfo | undefined>;
  foldJobs<A>(type: string, fold: (accumulator: A, job: JobInfo) => A, initial: A, filter?: JobsFilter): Promise<A>;
  pendingCount(type: string): Promise<number>;
  getActiveJobIds(type: string): Promise<string[]>;
  add(type: string, id: string, data?: JsonValue, options?: AddOptions): Promise<JobState>;
  remove(type: string, id: string): Promise<boolean>;
  cancel(type: string, id: string): Promise<boolean>;
  retry(type: string, id: string): Promise<void>;
  /** The flow under a job as one tree, `undefined` for a job in no flow. */
  getFlow(type: string, id: string): Promise<FlowNode | undefined>;
  /** The live tree, the host threads, and fault injection. */
  tree(): TreeNode;
  threads(): number[];
  whereis(name: string): string | undefined;
  kill(name: string): Promise<void>;
  scheduler(): SchedulerView | undefined;
}

/** The parts of a jobs app that {@link adminTarget} reads (the app itself fits). */
export interface AdminApp extends Omit<AdminTarget, 'tree' | 'threads' | 'whereis' | 'kill' | 'scheduler'> {
  readonly system: {
    tree(): TreeNode;
    threads(): number[];
    whereis(name: string): string | undefined;
    kill(name: string): Promise<void>;
  };
}

/** The admin endpoint's view of an app; the scheduler is looked up on every use (it may come later). */
export function adminTarget(app: AdminApp): AdminTarget {
  return {
    getTypes: () => app.getTypes(),
    getTypeTimeout: (type) => app.getTypeTimeout(type),
    setTypeTimeout: (type, seconds) => app.setTypeTimeout(type, seconds),
    clearTypeTimeout: (type) => app.clearTypeTimeout(type),
    ...(app.getLimits === undefined ? {} : { getLimits: (type: string) => (app.getLimits as NonNullable<AdminApp['getLimits']>)(type) }),
    pause: (type) => app.pause(type),
    resume: (type) => app.resume(type),
    getPausedTypes: () => app.getPausedTypes(),
    schedules: () => app.schedules(),
    schedule: (name, spec, options) => app.schedule(name, spec, options),
    unschedule: (name) => app.unschedule(name),
    getJob: (type, id) => app.getJob(type, id),
    foldJobs: (type, fold, initial, filter) => app.foldJobs(type, fold, initial, filter),
    pendingCount: (type) => app.pendingCount(type),
    getActiveJobIds: (type) => app.getActiveJobIds(type),
    add: (type, id, data, options) => app.add(type, id, data, options),
    remove: (type, id) => app.remove(type, id),
    cancel: (type, id) => app.cancel(type, id),
    retry: (type, id) => app.retry(type, id),
    getFlow: (type, id) => app.getFlow(type, id),
    tree: () => app.system.tree(),
    threads: () => app.system.threads(),
    whereis: (name) => app.system.whereis(name),
    kill: (name) => app.system.kill(name),
    scheduler: () => schedulerOf(app),
  };
}
