// Shared set-up of the processor tests: a fresh store in a temp dir, a
// scheduler on it that is stopped at the end, a clock whose time a test can
// move forward, and waiting on scheduler events instead of sleeping. A test
// declared with testInModes runs twice: its handlers in worker threads, and
// on the main thread (the same fixture's function, passed with runIn: 'main').

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { type Jobs, openJobs } from '@jobtree/core';
import type { Clock } from '../../packages/jobtree/src/clock.js';
import {
  type HandlerDefinition,
  type ProcessorOptions,
  type Scheduler,
  type SchedulerEventTypes,
  startScheduler,
} from '../../packages/jobtree/src/processors/index.js';

export const fixture = (name: string): URL => new URL(`./fixtures/${name}.ts`, import.meta.url);

/** Where a harness's schedulers run their handlers. */
export type HandlerMode = 'threads' | 'main';
export const HANDLER_MODES: readonly HandlerMode[] = ['threads', 'main'];
const modeOf = new WeakMap<ExecutionContext, HandlerMode>();

/** Declares a test once per handler mode (its title says which); the harness it makes runs handlers that way. */
export function testInModes(title: string, implementation: (t: ExecutionContext, mode: HandlerMode) => Promise<void>): void {
  for (const mode of HANDLER_MODES) {
    test(`${title} (${mode === 'main' ? 'main thread' : 'threads'})`, (t) => {
      modeOf.set(t, mode);
      return implementation(t, mode);
    });
  }
}

export interface Harness {
  jobs: Jobs;
  dir: string;
  mode: HandlerMode;
  start(type: string, handler: string, options?: ProcessorOptions): Promise<Scheduler>;
}

export async function harness(t: ExecutionContext, timeoutSeconds = 3): Promise<Harness> {
  const mode = modeOf.get(t) ?? 'threads';
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-processors-'));
  const jobs = await openJobs({ path: join(dir, 'db') });
  const schedulers: Scheduler[] = [];
  t.teardown(async () => {
    for (const scheduler of schedulers) await scheduler.stop({ graceMs: 100 });
    await jobs.close();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    jobs,
    dir,
    mode,
    async start(type, handler, options = {}) {
      if ((await jobs.getTypeTimeout(type)) === undefined) await jobs.setTypeTimeout(type, timeoutSeconds);
      // One handler thread unless a test asks for more: each one loads the
      // handler modules through tsx, about a CPU second of the test's time.
      const scheduler =
        mode === 'main'
          ? await startScheduler({ jobs, type, handler: await definitionOf(handler), runIn: 'main', ...options })
          : await startScheduler({ jobs, type, handler: fixture(handler), threads: 1, ...options });
      schedulers.push(scheduler);
      return scheduler;
    },
  };
}

/** A fixture's handler definition, imported into this thread. */
async function definitionOf(name: string): Promise<HandlerDefinition<never, unknown>> {
  const module = (await import(fixture(name).href)) as { default: HandlerDefinition<never, unknown> };
  return module.default;
}

/** Resolves with the first event of `name` that `match` accepts. */
export function nextEvent<K extends keyof SchedulerEventTypes>(
  scheduler: Scheduler,
  name: K,
  match: (...args: SchedulerEventTypes[K]) => boolean = () => true,
  timeoutMs = 60_000,
): Promise<SchedulerEventTypes[K][0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      scheduler.events.off(name, listener);
      reject(new Error(`no ${name} event within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (...args: SchedulerEventTypes[K]): void => {
      if (!match(...args)) return;
      clearTimeout(timer);
      scheduler.events.off(name, listener);
      resolve(args[0]);
    };
    scheduler.events.on(name, listener as never);
  });
}

/** Polls `check` (a store read) until it holds; for conditions no event announces. */
/**
 * `jobs` with a cancel of the job committed just before each call of
 * `method` (the write that ends a run: `fail` or `failAttempt`), so the
 * scheduler's write meets a job cancelled after its run ended.
 */
export function cancelledBefore(jobs: Jobs, method: 'fail' | 'failAttempt'): Jobs {
  return new Proxy(jobs, {
    get(target, key) {
      if (key === method) {
        return async (job: { type: string; id: string }, ...rest: unknown[]) => {
          await target.cancel(job.type, job.id);
          return (target[method] as (...args: unknown[]) => Promise<unknown>).call(target, job, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 60_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The system clock moved forward by whatever the test skips. */
export class SkippingClock implements Clock {
  #offset = 0;
  now(): number {
    return Date.now() + this.#offset;
  }
  skip(ms: number): void {
    this.#offset += ms;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    return setTimeout(callback, ms);
  }
  clearTimeout(handle: unknown): void {
    clearTimeout(handle as NodeJS.Timeout);
  }
  realMs(ms: number): number {
    return ms;
  }
}
