// The app's Prometheus metrics (prom-client), in a registry of its own so
// that two apps in one process never share a series (the process's default
// metrics are shared: process-metrics.ts). Counters and histograms
// follow the jobs handle's activity and the supervisors' events; gauges are
// read when scraped.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JobActivity } from './job-activity.js';
import { processMetrics } from './process-metrics.js';
import type { QueueSampler } from './queue-sampler.js';
import { type SchedulerView, statsByType } from './scheduler-view.js';
import type { SchedulerStats } from '../processors/index.js';

/** What the gauges read at scrape time. */
export interface MetricsSources {
  activity: JobActivity;
  queues: QueueSampler;
  threads(): number;
  scheduler(): SchedulerView | undefined;
  /** The paused types, read from the store. */
  pausedTypes(): Promise<string[]>;
}

/** add -> start waits and run times span sub-millisecond no-ops to hour-long jobs. */
const TIME_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

export class AppMetrics {
  readonly registry = new Registry();
  readonly #restarts: Counter<'supervisor' | 'child'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    const added = new Counter({ name: 'jobtree_jobs_added_total', help: 'add calls that left a job pending: new jobs, finished ones enqueued again, and pending ones updated.', labelNames: ['type'], registers });
    const accepted = new Counter({ name: 'jobtree_jobs_accepted_total', help: 'Jobs accepted by a worker (pending -> running).', labelNames: ['type'], registers });
    const finished = new Counter({ name: 'jobtree_jobs_finished_total', help: 'Jobs that succeeded: finished, not given up nor cancelled (a finish that sends a job flagged for resubmission back to the queue does not count).', labelNames: ['type'], registers });
    const crashed = new Counter({ name: 'jobtree_job_runs_crashed_total', help: 'Runs that crashed and whose job the scheduler runs again after a backoff.', labelNames: ['type'], registers });
    const failed = new Counter({ name: 'jobtree_jobs_failed_total', help: 'Jobs given up: finished with a failed outcome once out of attempts.', labelNames: ['type'], registers });
    const cancelled = new Counter({ name: 'jobtree_jobs_cancelled_total', help: 'Pending or running jobs ended as cancelled by this process (cancel of a job that had ended already does not count).', labelNames: ['type'], registers });
    const retried = new Counter({ name: 'jobtree_jobs_retried_total', help: 'Failed or cancelled jobs run again by retry from this process (a crashed run the scheduler runs again counts in jobtree_job_runs_crashed_total).', labelNames: ['type'], registers });
    const reEnqueued = new Counter({ name: 'jobtree_jobs_reenqueued_total', help: 'Running jobs put back in the queue by the activity monitor (their worker went silent).', labelNames: ['type'], registers });
    const removed = new Counter({ name: 'jobtree_jobs_removed_total', help: 'Jobs removed.', labelNames: ['type'], registers });
    const wait = new Histogram({ name: 'jobtree_job_wait_seconds', help: 'From add (or the scheduled time, if later) to accept, for jobs added and accepted in this process.', labelNames: ['type'], buckets: TIME_BUCKETS, registers });
    const run = new Histogram({ name: 'jobtree_job_run_seconds', help: 'From accept to finish, whatever the run ended with, for jobs accepted and finished in this process.', labelNames: ['type'], buckets: TIME_BUCKETS, registers });
    const blocked = new Histogram({
      name: 'jobtree_event_loop_blocked_seconds',
      help: "How long the main thread's event loop was held up, each time in-process handlers of the type held it longer than their processor's blockedLoopMs.",
      labelNames: ['type'],
      buckets: TIME_BUCKETS,
      registers,
    });
    this.#restarts = new Counter({ name: 'jobtree_restarts_total', help: 'Restarts of a child by its supervisor.', labelNames: ['supervisor', 'child'], registers });
    new Gauge({
      name: 'jobtree_jobs',
      help: 'Jobs per type and state (read from the store at most once per refresh period).',
      labelNames: ['type', 'state'],
      registers,
      async collect() {
        this.reset();
        const sample = await sources.queues.sample();
        for (const queue of sample.types) {
          for (const state of ['pending', 'running', 'finished'] as const) this.set({ type: queue.type, state }, queue[state]);
        }
      },
    });
    new Gauge({
      name: 'jobtree_type_paused',
      help: 'Paused job types, one series each (value 1): no process starts their jobs until resumed.',
      labelNames: ['type'],
      registers,
      async collect() {
        this.reset();
        for (const type of await sources.pausedTypes()) this.set({ type }, 1);
      },
    });
    new Gauge({
      name: 'jobtree_threads',
      help: 'Host threads of the actor system (the main thread not counted).',
      registers,
      collect() {
        this.set(sources.threads());
      },
    });
    // Both scheduler gauges read the same per-type stats, one field each.
    const schedulerGauge = (name: string, help: string, pick: (stats: SchedulerStats, state: 'pending' | 'running' | 'crashed') => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['type', 'state'],
        registers,
        collect() {
          this.reset();
          const view = sources.scheduler();
          if (view === undefined) return;
          for (const [type, stats] of Object.entries(statsByType(view))) {
            for (const state of ['pending', 'running', 'crashed'] as const) this.set({ type, state }, pick(stats, state));
          }
        },
      });
    schedulerGauge(
      'jobtree_scheduler_jobs',
      "Jobs the scheduler tracks, per type and state (absent when the app runs no processors; type '' for a single scheduler).",
      (stats, state) => stats[state],
    );
    schedulerGauge(
      'jobtree_scheduler_average_age_seconds',
      "Average seconds since the last event of the scheduler's jobs, per type and state.",
      (stats, state) => stats.averageAgeSeconds[state],
    );
    const events = sources.activity.events;
    events.on('added', (type, count) => added.inc({ type }, count));
    events.on('accepted', (type, count, waits) => {
      accepted.inc({ type }, count);
      for (const seconds of waits) wait.observe({ type }, seconds);
    });
    events.on('finished', (type, count) => finished.inc({ type }, count));
    events.on('crashed', (type) => crashed.inc({ type }));
    events.on('failed', (type, count) => failed.inc({ type }, count));
    events.on('cancelled', (type) => cancelled.inc({ type }));
    events.on('retried', (type) => retried.inc({ type }));
    events.on('ran', (type, runs) => {
      for (const seconds of runs) run.observe({ type }, seconds);
    });
    events.on('reEnqueued', (type, ids) => reEnqueued.inc({ type }, ids.length));
    events.on('removed', (type) => removed.inc({ type }));
    events.on('loopBlocked', (type, lagMs) => blocked.observe({ type }, lagMs / 1000));
  }

  recordRestart(supervisor: string, child: string): void {
    this.#restarts.inc({ supervisor, child });
  }

  /** The text exposition format: the process's default metrics, then the app's. */
  text(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
