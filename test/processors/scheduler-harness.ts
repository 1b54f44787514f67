// Shared set-up of the processor tests: a fresh store in a temp dir, a
// scheduler on it that is stopped at the end, a clock whose time a test can
// move forward, and waiting on scheduler events instead of sleeping.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { type Jobs, openJobs } from '@jobtree/core';
import type { Clock } from '../../packages/jobtree/src/clock.js';
import {
  type ProcessorOptions,
  type Scheduler,
  type SchedulerEventTypes,
  startScheduler,
} from '../../packages/jobtree/src/processors/index.js';

export const fixture = (name: string): URL => new URL(`./fixtures/${name}.ts`, import.meta.url);

export interface Harness {
  jobs: Jobs;
  dir: string;
  start(type: string, handler: string, options?: ProcessorOptions): Promise<Scheduler>;
}

export async function harness(t: ExecutionContext, timeoutSeconds = 3): Promise<Harness> {
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
    async start(type, handler, options = {}) {
      if ((await jobs.getTypeTimeout(type)) === undefined) await jobs.setTypeTimeout(type, timeoutSeconds);
      const scheduler = await startScheduler({ jobs, type, handler: fixture(handler), threads: 2, ...options });
      schedulers.push(scheduler);
      return scheduler;
    },
  };
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
