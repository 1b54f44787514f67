// prom-client's default metrics (process CPU, memory, event loop lag, GC)
// describe the process, not an app: they are collected once per process and
// shared by every app's /metrics. Collecting them per app started one event
// loop delay monitor and one GC observer per admin app that nothing ever
// stopped.

import { createRequire } from 'node:module';
import test from 'ava';
import { EventEmitter } from 'node:events';
import { AppMetrics, type MetricsSources } from '../../packages/jobtree/src/admin/app-metrics.js';
import type { JobActivity } from '../../packages/jobtree/src/admin/job-activity.js';
import type { QueueSampler } from '../../packages/jobtree/src/admin/queue-sampler.js';

const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as typeof import('node:perf_hooks');

function sources(): MetricsSources {
  return {
    activity: { events: new EventEmitter() } as unknown as JobActivity,
    queues: { sample: async () => ({ types: [] }) } as unknown as QueueSampler,
    threads: () => 1,
    scheduler: () => undefined,
    pausedTypes: async () => [],
  };
}

test.serial('metrics of many apps start one event loop delay monitor in all, and each app still exposes the process metrics', async (t) => {
  const original = perfHooks.monitorEventLoopDelay;
  let monitors = 0;
  perfHooks.monitorEventLoopDelay = (options) => {
    monitors++;
    return original(options);
  };
  t.teardown(() => {
    perfHooks.monitorEventLoopDelay = original;
  });
  const apps = Array.from({ length: 5 }, () => new AppMetrics(sources()));
  t.true(monitors <= 1, `${monitors} event loop delay monitors for 5 apps`);
  for (const metrics of apps) {
    const text = await metrics.text();
    t.is(text.match(/^# TYPE process_cpu_seconds_total /gm)?.length, 1);
    t.regex(text, /^# TYPE nodejs_eventloop_lag_seconds gauge/m);
    t.regex(text, /^# TYPE jobtree_threads gauge/m);
  }
});
