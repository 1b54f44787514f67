// A handler module's default export: the function and the URL worker
// threads load it from, typed by the job data and the result.

import { access } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JsonValue } from '@jobtree/core';
import { SchedulerError } from './errors.js';
import type { Handler, HandlerDefinition } from './interfaces.js';

/**
 * Defines a job handler. Put it in a module of its own, as the default
 * export, and pass `import.meta.url`:
 *
 * @example
 * // resize.ts
 * export default defineHandler<{ size: number }, { url: string }>(import.meta.url, async (job, ctx) => {
 *   await ctx.update({ size: job.data.size });
 *   return { url: `https://cdn.example/${job.id}` };
 * });
 */
export function defineHandler<D = JsonValue, R = unknown>(url: string | URL, run: Handler<D, R>): HandlerDefinition<D, R> {
  if (typeof run !== 'function') throw new SchedulerError('invalid_handler', 'defineHandler needs a handler function');
  return Object.freeze({ url: String(url), run });
}

/** Where handlers run: `main` on the main thread's event loop, `threads` in worker threads. */
export type HandlerPlace = 'main' | 'threads';

/**
 * What a scheduler runs: the handler function itself when it runs on the
 * main thread, else the URL of the module its threads load. A plain
 * function runs on the main thread (no thread could load it); a definition
 * or a module runs in threads unless `runIn` is `main` (a module is then
 * imported here, once). Refuses a module file that is not there.
 */
export async function resolveHandler(
  handler: HandlerDefinition<never, unknown> | Handler<never, unknown> | string | URL,
  runIn: HandlerPlace | undefined,
): Promise<string | Handler<JsonValue, unknown>> {
  if (typeof handler === 'function') {
    if (runIn === 'threads') {
      throw new SchedulerError('invalid_option', "a handler function runs on the main thread: to run it in threads, export it from a module with defineHandler(import.meta.url, fn)");
    }
    return handler as Handler<JsonValue, unknown>;
  }
  const url = handlerUrl(handler);
  await checkHandlerModule(url);
  if (runIn !== 'main') return url;
  if (typeof handler === 'object' && handler !== null && !(handler instanceof URL) && typeof handler.run === 'function') {
    return handler.run as Handler<JsonValue, unknown>;
  }
  return loadHandler(url);
}

/** The URL a handler option points at (a definition's, or a module's given by URL or absolute path). */
export function handlerUrl(handler: HandlerDefinition<never, unknown> | string | URL): string {
  if (handler instanceof URL) return handler.href;
  if (typeof handler === 'string') {
    if (isAbsolute(handler)) return pathToFileURL(handler).href;
    if (URL.canParse(handler)) return handler;
    throw new SchedulerError('invalid_handler', `a handler module is a URL or an absolute path, got ${JSON.stringify(handler)}`);
  }
  if (typeof handler === 'object' && handler !== null && typeof handler.url === 'string') return handler.url;
  throw new SchedulerError('invalid_handler', 'a handler is a function, a defineHandler() definition, or a module URL or path');
}

/**
 * Refuses a handler module file that is not there, at start: the worker
 * threads would otherwise fail to load it for every job, each job spending
 * its attempts (with backoff) on "Cannot find module". The module is not
 * imported here (its top level runs in the worker threads only); the URL
 * is resolved as an import would resolve it (a loader such as tsx may map
 * `.js` to `.ts`). Modules that are not files are left to the threads.
 */
export async function checkHandlerModule(url: string): Promise<void> {
  if (!url.startsWith('file:')) return;
  let resolved = url;
  try {
    resolved = import.meta.resolve(url);
  } catch {
    // Left as given: the file check below says whether it is there.
  }
  try {
    await access(fileURLToPath(resolved));
  } catch {
    throw new SchedulerError('invalid_handler', `the handler module ${fileURLToPath(url)} does not exist`);
  }
}

/** A handler module's handler: its default export's function (a definition's `run`, or the export itself). */
export async function loadHandler(url: string): Promise<Handler<JsonValue, unknown>> {
  return handlerOfModule(await import(url), url);
}

/** A loaded handler module's handler, or `invalid_handler` when its default export is none. */
export function handlerOfModule(module: { default?: unknown }, url: string): Handler<JsonValue, unknown> {
  const exported = module.default;
  if (typeof exported === 'function') return exported as Handler<JsonValue, unknown>;
  if (typeof exported === 'object' && exported !== null && 'run' in exported && typeof exported.run === 'function') {
    return exported.run as Handler<JsonValue, unknown>;
  }
  throw new SchedulerError('invalid_handler', `${url} has no default export made by defineHandler() or a function`);
}
