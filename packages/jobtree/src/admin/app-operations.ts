// Everything an operator sees of a jobs app, in one place the app owns: the
// logger (restarts, crashes, re-enqueues, intensity reached), the activity
// of its jobs handle and its schedulers' crashed runs, and — when `admin` is
// set — the metrics, the live feed and the admin endpoint. The app calls
// follow* as its tree starts (followScheduler as each scheduler starts,
// followHandlerThreads once its handler threads start),
// start() once it runs and stop() first when it closes.

import type { ActorSystemEvents, ExitReason } from '@jobtree/actors';
import { pino, type Logger } from 'pino';
import type { EventEmitter } from 'eventemitter3';
import type { SupervisorEvents } from '@jobtree/supervisor';
import type { HandlerThreads } from '../processors/handler-threads.js';
import type { Scheduler } from '../processors/scheduler.js';
import type { OperationsSettings } from './admin-options.js';
import { AdminServer } from './admin-server.js';
import type { AdminTarget } from './admin-target.js';
import { AppMetrics } from './app-metrics.js';
import { JobActivity } from './job-activity.js';
import { LiveFeed } from './live-feed.js';
import { QueueSampler } from './queue-sampler.js';
import { runningScheduler, statsByType } from './scheduler-view.js';

/** The admin endpoint of a running app (`app.admin`). */
export interface AdminEndpoint {
  /** Base URL, e.g. `http://127.0.0.1:7070`; the dashboard is at `/`, metrics at `/metrics`. */
  readonly url: string;
  /** The token mutating requests need (`Authorization: Bearer <token>`). */
  readonly token: string;
  /** The Prometheus exposition text, as `/metrics` serves it. */
  metrics(): Promise<string>;
}

/** The most re-enqueued ids a single log line lists. */
const LOGGED_IDS = 20;

export class AppOperations {
  readonly activity: JobActivity;
  readonly logger: Logger;
  readonly #settings: OperationsSettings;
  readonly #startedAt = Date.now();
  #metrics: AppMetrics | undefined;
  #feed: LiveFeed | undefined;
  #server: AdminServer | undefined;

  constructor(settings: OperationsSettings) {
    this.#settings = settings;
    // Jobs are timed for the metrics alone, which only an admin endpoint serves.
    this.activity = new JobActivity({ timed: settings.admin !== undefined });
    this.logger =
      settings.logger?.child({ component: 'jobtree' }) ??
      pino({ name: 'jobtree', level: settings.logLevel }, pino.destination({ dest: 2, sync: true }));
    this.activity.events.on('reEnqueued', (type, ids) => {
      this.logger.info({ type, count: ids.length, ids: ids.slice(0, LOGGED_IDS) }, 're-enqueued jobs whose worker went silent');
    });
    this.activity.events.on('loopBlocked', (type, lagMs, ids) => {
      this.logger.warn({ type, lagMs, ids }, 'in-process handlers held the event loop up: a handler that computes for long belongs in threads');
    });
    this.activity.events.on('threadsRestarting', (reason, failures, delayMs) => {
      this.logger.warn({ reason, failures, delayMs }, 'a handler thread exited before it ran a job: the next starts late');
    });
  }

  /** Logs and counts a supervisor's restarts, crashes and intensity; `nameOf` turns a child id into its actor name. */
  followSupervisor(supervisor: string, events: SupervisorEvents, nameOf: (childId: string) => string = (id) => id): void {
    events.on('child_restarted', ({ id, actor, previous }) => {
      const child = nameOf(id);
      this.logger.warn({ supervisor, child, actor, previous }, 'restarted');
      this.#metrics?.recordRestart(supervisor, child);
      this.#feed?.broadcast('restart', { supervisor, child, actor, previous: previous ?? null, at: Date.now() });
      this.#feed?.refreshSoon();
    });
    events.on('child_exited', ({ id, actor, reason, terminated }) => {
      if (terminated || !isAbnormal(reason)) return;
      this.logger.warn({ supervisor, child: nameOf(id), actor, reason }, 'crashed');
      this.#feed?.refreshSoon();
    });
    events.on('child_started', () => this.#feed?.refreshSoon());
    events.on('intensity_reached', ({ restarts, intensity, period }) => {
      this.logger.error({ supervisor, restarts, intensity, periodMs: period }, 'restart intensity reached: the supervisor stops its children and exits');
    });
  }

  /** Logs the runtime's thread replacements (a thread terminated under its actors). */
  followActors(events: EventEmitter<ActorSystemEvents>): void {
    events.on('thread_replaced', ({ thread, replacement, killed }) => {
      this.logger.warn({ thread, replacement, killed }, 'host thread terminated and replaced');
      this.#feed?.refreshSoon();
    });
  }

  /**
   * Counts a scheduler's crashed runs: the job goes back to the queue through
   * a finish like any other requeue, so only the scheduler can tell a crash.
   */
  followScheduler(scheduler: Scheduler): void {
    scheduler.events.on('job:crashed', ({ id }) => this.activity.recordCrashed(scheduler.type, id));
    scheduler.events.on('loop:blocked', ({ lagMs, jobs }) => this.activity.recordLoopBlocked(scheduler.type, lagMs, jobs));
  }

  /**
   * Follows the app's handler threads: a thread that exits before it ran a
   * job is told once, whatever the types whose schedulers share the threads
   * (each of them hears it too, as its `threads:restarting`).
   */
  followHandlerThreads(threads: HandlerThreads): void {
    threads.events.on('threads:restarting', ({ reason, failures, delayMs }) => this.activity.recordThreadsRestarting(reason, failures, delayMs));
  }

  /** Starts the admin endpoint, when the options asked for one. */
  async start(target: AdminTarget): Promise<void> {
    const admin = this.#settings.admin;
    if (admin === undefined) return;
    const queues = new QueueSampler(target, admin.refreshMs);
    this.#metrics = new AppMetrics({
      activity: this.activity,
      queues,
      threads: () => target.threads().length,
      scheduler: () => target.scheduler(),
      pausedTypes: async () => (await target.getPausedTypes()).map((each) => each.type),
    });
    this.#feed = new LiveFeed(
      {
        tree: () => ({ threads: target.threads(), tree: target.tree() }),
        queues: async () => {
          const [sample, paused, schedules] = await Promise.all([queues.sample(), target.getPausedTypes(), target.schedules()]);
          return { ...sample, totals: this.activity.totals(), paused: paused.map((each) => each.type), schedules };
        },
        scheduler: () => {
          const view = runningScheduler(target.scheduler());
          return view === undefined ? undefined : { stats: statsByType(view), jobs: view.jobs() };
        },
      },
      admin.refreshMs,
    );
    this.#server = new AdminServer({
      settings: admin,
      app: target,
      activity: this.activity,
      queues,
      pid: process.pid,
      startedAt: this.#startedAt,
      feed: this.#feed,
      metrics: this.#metrics,
      logger: this.logger,
    });
    await this.#server.listen();
  }

  /** The admin endpoint, when it runs. */
  get admin(): AdminEndpoint | undefined {
    const server = this.#server;
    const metrics = this.#metrics;
    if (server === undefined || metrics === undefined) return undefined;
    return { url: server.url, token: server.token, metrics: () => metrics.text() };
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    await server?.close();
  }
}

function isAbnormal(reason: ExitReason): boolean {
  return reason !== 'normal' && reason !== 'shutdown' && !(typeof reason === 'object' && 'shutdown' in reason);
}
