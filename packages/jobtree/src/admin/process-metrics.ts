// prom-client's default metrics (process CPU and memory, event loop lag,
// GC, handles) describe the process, not an app. They are collected once
// per process, in one registry every app's /metrics merges with its own:
// collecting them per app would start an event loop delay monitor and a
// GC observer per app, which prom-client gives no way to stop.

import { Registry, collectDefaultMetrics } from 'prom-client';

let shared: Registry | undefined;

/** The process-wide registry of the default metrics, created on first use. */
export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
