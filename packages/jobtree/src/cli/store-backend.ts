// The backend for a data directory where no app recorded an admin endpoint:
// the command opens the embedded store with openJobs (a client of the
// process that owns it, or its owner for a moment when none does) and
// answers what a store alone can answer. The live tree, the scheduler and
// kills need a running app.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type AddOptions, type FlowNode, type JobInfo, type JobOutcome, type JobState, type Jobs, type JsonValue, openJobs, type TypeLimits } from '@jobtree/core';
import { withNextTicks } from '../app/app-schedules.js';
import type { Backend, JobView, JobsView, KillReport, SchedulerReport, SchedulesView, StatusView, TypeView, TypesView } from './backend.js';
import { CliError } from './cli-error.js';

/** The file lmdb keeps an embedded store's data in, inside its directory: a directory without it holds no store. */
const STORE_FILE = 'data.mdb';

export class StoreBackend implements Backend {
  readonly kind = 'store';
  readonly #jobs: Jobs;
  readonly #path: string;

  private constructor(jobs: Jobs, path: string) {
    this.#jobs = jobs;
    this.#path = path;
  }

  /**
   * Opens the store at `path`; it must exist: a command must not create an
   * empty store, least of all in a directory given by mistake (`--path ~`).
   */
  static async open(path: string, options: { create?: boolean } = {}): Promise<StoreBackend> {
    if (!options.create && !existsSync(join(path, STORE_FILE))) throw new CliError('request_failed', `no store at ${path} (and no app running there)`);
    try {
      return new StoreBackend(await openJobs({ path }), path);
    } catch (error) {
      if ((error as { code?: string }).code === 'database_locked') {
        const pid = (error as { ownerPid?: number }).ownerPid;
        throw new CliError(
          'no_app',
          `the store at ${path} is owned by process ${pid}, which serves no other processes (it opened the store with openDatabase) and records no admin endpoint: open it with startJobs, or start it with startJobs({ admin: { port } }) to reach it from here`,
          { cause: error },
        );
      }
      throw new CliError('request_failed', `cannot open the store at ${path}: ${(error as Error).message}`, { cause: error });
    }
  }

  async status(): Promise<StatusView> {
    return { running: false, url: null, pid: null, uptimeMs: null, now: Date.now(), threads: null, tree: null, scheduler: false };
  }

  async types(): Promise<TypesView> {
    return this.#wrap(async () => {
      const at = Date.now();
      const out: TypeView[] = [];
      const paused = new Set((await this.#jobs.getPausedTypes()).map((each) => each.type));
      for (const type of await this.#jobs.getTypes()) {
        const counts = await this.#jobs.foldJobs(
          type,
          (acc, job) => {
            acc[job.state] += 1;
            return acc;
          },
          { waiting: 0, pending: 0, running: 0, finished: 0 } as Record<JobState, number>,
        );
        const { pending, running, finished } = counts;
        out.push({ type, timeout: await this.#jobs.getTypeTimeout(type), paused: paused.has(type), pending, running, finished, finishedAt: Date.now(), totals: null });
      }
      return { at, types: out };
    });
  }

  async jobs(type: string, state: JobState | undefined, limit: number, outcome?: JobOutcome, offset = 0): Promise<JobsView> {
    return this.#wrap(async () => {
      const found = await this.#jobs.foldJobs(
        type,
        (acc, job) => {
          if (state !== undefined && job.state !== state) return acc;
          if (acc.total >= offset && acc.jobs.length < limit) acc.jobs.push(job);
          acc.total += 1;
          return acc;
        },
        { total: 0, jobs: [] as JobInfo[] },
        outcome === undefined ? undefined : { outcome },
      );
      return { type, state: state ?? null, outcome: outcome ?? null, offset, limit, ...found };
    });
  }

  async job(type: string, id: string): Promise<JobView> {
    const job = await this.#wrap(() => this.#jobs.getJob(type, id));
    if (job === undefined) throw new CliError('request_failed', `not_found: no job ${id} of type ${type}`);
    return { ...job, scheduler: null };
  }

  async flow(type: string, id: string): Promise<FlowNode> {
    const flow = await this.#wrap(() => this.#jobs.getFlow(type, id));
    if (flow === undefined) throw new CliError('request_failed', `not_found: job ${id} of type ${type} is in no flow`);
    return flow;
  }

  async add(type: string, id: string, data: JsonValue, options: AddOptions): Promise<{ type: string; id: string; state: JobState }> {
    return { type, id, state: await this.#wrap(() => this.#jobs.add(type, id, data, options)) };
  }

  async remove(type: string, id: string): Promise<{ type: string; id: string; removed: boolean }> {
    const removed = await this.#wrap(() => this.#jobs.remove(type, id));
    if (!removed) throw new CliError('request_failed', `not_found: no job ${id} of type ${type}`);
    return { type, id, removed };
  }

  async retry(type: string, id: string): Promise<{ type: string; id: string; state: 'pending' }> {
    await this.#wrap(() => this.#jobs.retry(type, id));
    return { type, id, state: 'pending' };
  }

  async cancel(type: string, id: string): Promise<{ type: string; id: string; cancelled: boolean }> {
    return { type, id, cancelled: await this.#wrap(() => this.#jobs.cancel(type, id)) };
  }

  async setTimeout(type: string, seconds: number | undefined): Promise<{ type: string; timeout: number | null }> {
    return this.#wrap(async () => {
      if (seconds === undefined) await this.#jobs.clearTypeTimeout(type);
      else await this.#jobs.setTypeTimeout(type, seconds);
      return { type, timeout: (await this.#jobs.getTypeTimeout(type)) ?? null };
    });
  }

  async limits(type: string): Promise<{ type: string; limits: TypeLimits | null }> {
    return { type, limits: (await this.#wrap(() => this.#jobs.getTypeLimits(type))) ?? null };
  }

  async schedules(): Promise<SchedulesView> {
    const at = Date.now();
    return { at, schedules: withNextTicks(await this.#wrap(() => this.#jobs.getSchedules()), at) };
  }

  async setPaused(type: string, paused: boolean): Promise<{ type: string; paused: boolean }> {
    await this.#wrap(() => (paused ? this.#jobs.pause(type) : this.#jobs.resume(type)));
    return { type, paused };
  }

  async scheduler(): Promise<SchedulerReport> {
    throw this.#needsApp('the scheduler');
  }

  async kill(_name: string): Promise<KillReport> {
    throw this.#needsApp('killing an actor');
  }

  dashboardUrl(): string {
    throw this.#needsApp('the dashboard');
  }

  async dashboardOpenUrl(): Promise<string> {
    throw this.#needsApp('the dashboard');
  }

  async close(): Promise<void> {
    await this.#jobs.close();
  }

  #needsApp(what: string): CliError {
    return new CliError('no_app', `${what} needs a running app, and none runs on ${this.#path}`);
  }

  /** A store error is a failed request with the error's code in the one-line message. */
  async #wrap<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError('request_failed', (error as Error).message, { cause: error });
    }
  }
}
