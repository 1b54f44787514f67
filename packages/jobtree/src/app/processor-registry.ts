// The processors of `app.process`, by job type: each type's current
// scheduler (the re-creation of couch_replicator_scheduler) and the
// `processor:<type>` actor under user_sup holding it, and every scheduler not
// stopped yet, the orphans of killed processors included. `app.scheduler`
// reports on them as CouchDB's `_scheduler` endpoints do.

import type { ActorId, ActorSystem, ExitReason } from '@jobtree/actors';
import { type JobDataOf, type Jobs, JobsError } from '@jobtree/core';
import type { AppOperations } from '../admin/app-operations.js';
import { type ClockSpec, clockFromSpec } from '../clock.js';
import { HandlerThreads } from '../processors/handler-threads.js';
import {
  DEFAULT_GRACE_MS,
  type HandlerFor,
  type JobSummary,
  type ProcessorOptions,
  type SchedulerJobs,
  type SchedulerStats,
} from '../processors/index.js';
import { resolveProcessorOptions } from '../processors/processor-options.js';
import { Scheduler, checkSchedulerStart } from '../processors/scheduler.js';
import { SYSTEM_NAMES } from './jobs-tree.js';
import { nameReleased } from './name-change.js';
import processorServer from './processor-server.js';
import type { UserChildren } from './user-children.js';

/** `app.scheduler`: the schedulers `app.process` started, as CouchDB's `_scheduler` endpoints report them. */
export interface AppScheduler {
  /** The current scheduler of a type (it changes when its processor restarts). */
  of(type: string): Scheduler | undefined;
  /** Every job the schedulers hold, like `_scheduler/jobs`. */
  jobs(): SchedulerJobs;
  /** One job's summary, with its history. */
  job(type: string, id: string): JobSummary | undefined;
  /** Counts and average ages of pending, running and crashed jobs, by type. */
  stats(): Record<string, SchedulerStats>;
}

export interface ProcessorRegistryOptions {
  actors: ActorSystem;
  clock: ClockSpec;
  /** The core's current handle: a processor (re)started after the core restarted takes the newest. */
  jobs(): Jobs;
  userChildren: UserChildren;
  operations: Pick<AppOperations, 'followScheduler' | 'followHandlerThreads'>;
  /** Threads of the handler pool every type's processor shares. */
  handlerThreads: number;
}

export class ProcessorRegistry {
  readonly #options: ProcessorRegistryOptions;
  /** The current scheduler of each type, and the processor actor holding it. */
  readonly #current = new Map<string, { scheduler: Scheduler; actor: ActorId }>();
  /** Every scheduler started and not stopped yet, the orphans of killed processors included. */
  readonly #live = new Set<Scheduler>();
  /** The handler threads of every type's processor, started by the first `process`. */
  #threads: HandlerThreads | undefined;
  readonly scheduler: AppScheduler;

  constructor(options: ProcessorRegistryOptions) {
    this.#options = options;
    options.actors.events.on('exited', (event) => this.#processorExited(event.id, event.reason));
    this.scheduler = {
      of: (type) => this.#current.get(type)?.scheduler,
      jobs: () => {
        const jobs = [...this.#current.values()].flatMap(({ scheduler }) => scheduler.jobs().jobs);
        return { total_rows: jobs.length, offset: 0, jobs };
      },
      job: (type, id) => this.#current.get(type)?.scheduler.job(type, id),
      stats: () => Object.fromEntries([...this.#current].map(([type, { scheduler }]) => [type, scheduler.stats()])),
    };
  }

  /** Starts `processor:<type>` under user_sup (see `app.process`). */
  async process<T extends string, D = JobDataOf<T>, R = unknown>(type: T, handler: HandlerFor<T, D, R>, options: ProcessorOptions = {}): Promise<void> {
    const { actors, jobs, userChildren, operations } = this.#options;
    const name = `processor:${type}`;
    if (actors.whereis(name) !== undefined) throw new JobsError('invalid_option', `job type ${JSON.stringify(type)} already has a processor`);
    const clock = clockFromSpec(this.#options.clock);
    // Checked here, not only in the child's start: a mistake is the caller's
    // SchedulerError, and no processor starts (to fail, or to fail its jobs).
    resolveProcessorOptions(options);
    const checked = await checkSchedulerStart({ clock, ...options, jobs: jobs(), type, handler } as Parameters<typeof checkSchedulerStart>[0]);
    // A handler in threads: the threads start now, and the module loads in
    // them before any job waits for it (a module that does not load is the
    // caller's error). A handler on the main thread needs no thread.
    let threads: HandlerThreads | undefined;
    if (typeof checked.handler === 'string') {
      if (this.#threads === undefined) {
        this.#threads = new HandlerThreads({ threads: this.#options.handlerThreads });
        operations.followHandlerThreads(this.#threads);
      }
      threads = this.#threads;
      await threads.load(checked.handler);
    }
    let previous: Scheduler | undefined;
    const start = async (actor: ActorId): Promise<Scheduler> => {
      const started = await checkSchedulerStart({ clock, ...options, jobs: jobs(), type, handler } as Parameters<typeof checkSchedulerStart>[0]);
      const scheduler = new Scheduler(jobs(), type, started.handler, started.settings, threads);
      // A restarted processor keeps the crash records of the one it replaces (attempts, backoffs).
      if (previous !== undefined) scheduler.continueFrom(previous);
      previous = scheduler;
      operations.followScheduler(scheduler);
      this.#current.set(type, { scheduler, actor });
      this.#live.add(scheduler);
      return scheduler;
    };
    const stop = async (scheduler: Scheduler, reason: ExitReason): Promise<void> => {
      // A killed user_sup (or core) leaves no time for grace: handlers are cut, their jobs go back at once.
      await scheduler.stop(reason === 'killed' ? { graceMs: 0 } : {});
      this.#live.delete(scheduler);
      if (this.#current.get(type)?.scheduler === scheduler) this.#current.delete(type);
    };
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    await userChildren.start({
      id: name,
      start: async (ctx) => {
        // When user_sup restarts, the processor it had may still be stopping
        // (signalling its handlers, resubmitting their jobs): its name is
        // taken until it is done, and that takes at most its grace period.
        await nameReleased(actors.events, (taken) => ctx.whereis(taken), name, performance.now() + graceMs + 5_000);
        return ctx.spawn(processorServer, { start, stop, supervisor: SYSTEM_NAMES.user }, { name, placement: 'main', link: true });
      },
      // The scheduler bounds its own stop by its grace period.
      shutdown: 'infinity',
    });
  }

  /** Stops every scheduler not stopped yet at once: what a dead tree leaves behind. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#live].map((scheduler) => this.#stopAtOnce(scheduler)));
  }

  /** Stops every scheduler left at once, then the handler threads. */
  async close(): Promise<void> {
    await this.stopAll();
    await this.#threads?.close();
  }

  /** A processor actor died: a killed one never ran its stop, so its scheduler is stopped now. */
  #processorExited(actor: ActorId, reason: ExitReason): void {
    for (const [type, current] of this.#current) {
      if (current.actor !== actor) continue;
      this.#current.delete(type);
      if (reason === 'killed') void this.#stopAtOnce(current.scheduler);
    }
  }

  /** Stops a scheduler at once (its handlers are signalled, their jobs go back to the queue). */
  async #stopAtOnce(scheduler: Scheduler): Promise<void> {
    await scheduler.stop({ graceMs: 0 }).catch(() => {});
    this.#live.delete(scheduler);
  }
}
