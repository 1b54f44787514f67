// One handler lane: the piscina task that runs in a worker thread for as
// long as its lane lives, running every handler the scheduler sends it
// concurrently. See lane-protocol.ts for the messages and lane-status.ts for
// the shared status words.

import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { type MessagePort, threadId } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { HandlerAbortError, SchedulerError } from './errors.js';
import type { AbortCause, Handler, HandlerContext } from './interfaces.js';
import { type FromLane, type LaneJob, type LaneResult, type LaneTask, type ToLane, serializeError } from './lane-protocol.js';
import { CURRENT, NO_JOB, TICK, TICK_MS } from './lane-status.js';

/** The serial of the job whose code runs, through every await of its handler. */
const jobScope = new AsyncLocalStorage<number>();
/** Serials of the callbacks being executed, innermost last. */
const executing: number[] = [];
let status: Int32Array | undefined;

// Every callback a handler's code schedules (timers, promise continuations,
// I/O) runs in the handler's job scope: publishing that scope on entry and
// exit tells the main thread which job a stuck or dying thread was running.
createHook({
  before() {
    const serial = jobScope.getStore() ?? NO_JOB;
    executing.push(serial);
    if (status !== undefined) Atomics.store(status, CURRENT, serial);
  },
  after() {
    executing.pop();
    if (status !== undefined) Atomics.store(status, CURRENT, executing.at(-1) ?? NO_JOB);
  },
}).enable();

interface Running {
  controller: AbortController;
}

export default async function runLane(task: LaneTask): Promise<void> {
  const port = task.port;
  status = new Int32Array(task.status);
  Atomics.store(status, CURRENT, NO_JOB);
  let handler: Handler<JsonValue, unknown>;
  try {
    handler = await loadHandler(task.handlerUrl);
  } catch (error) {
    send(port, { kind: 'broken', error: serializeError(error) });
    await closed(port);
    return;
  }
  const view = status;
  const ticker = setInterval(() => Atomics.add(view, TICK, 1), TICK_MS);
  const running = new Map<number, Running>();
  const updates = new Map<number, { resolve(): void; reject(error: Error): void }>();
  let nextRequest = 1;
  let results: LaneResult[] = [];
  let flushing = false;
  let closing = false;
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });

  const flush = (): void => {
    flushing = false;
    if (results.length === 0) return;
    sendResults(port, results);
    results = [];
    if (closing && running.size === 0) end();
  };
  const settle = (result: LaneResult): void => {
    running.delete(result.serial);
    results.push(result);
    // Results of handlers that end in the same turn go back in one message.
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };

  const start = ({ serial, job }: LaneJob): void => {
    const controller = new AbortController();
    running.set(serial, { controller });
    const ctx: HandlerContext<JsonValue> = {
      signal: controller.signal,
      update: (data) =>
        new Promise<void>((resolve, reject) => {
          if (!running.has(serial)) {
            reject(new SchedulerError('halt', `job ${JSON.stringify(job.id)} has ended`));
            return;
          }
          const request = nextRequest++;
          updates.set(request, { resolve, reject });
          send(port, { kind: 'update', request, serial, data });
        }),
    };
    let outcome: Promise<unknown>;
    Atomics.store(view, CURRENT, serial);
    try {
      outcome = Promise.resolve(jobScope.run(serial, () => handler(job, ctx)));
    } catch (error) {
      outcome = Promise.reject(error);
    } finally {
      Atomics.store(view, CURRENT, executing.at(-1) ?? NO_JOB);
    }
    outcome.then(
      (value) => settle({ serial, ok: true, value }),
      (error: unknown) => settle({ serial, ok: false, error: serializeError(error) }),
    );
  };

  port.on('message', (message: ToLane) => {
    switch (message.kind) {
      case 'start':
        for (const job of message.jobs) start(job);
        break;
      case 'abort':
        for (const serial of message.serials) abort(running.get(serial), message.cause);
        break;
      case 'updated': {
        const waiter = updates.get(message.request);
        updates.delete(message.request);
        if (message.error === undefined) waiter?.resolve();
        else if (message.error.code === 'halt') waiter?.reject(new SchedulerError('halt', message.error.message));
        else waiter?.reject(Object.assign(new Error(message.error.message), { name: message.error.name, code: message.error.code }));
        break;
      }
      case 'close':
        closing = true;
        if (running.size === 0 && !flushing) end();
        break;
    }
  });
  send(port, { kind: 'ready', threadId });
  await ended;
  clearInterval(ticker);
  port.close();
}

function abort(running: Running | undefined, cause: AbortCause): void {
  if (running === undefined || running.controller.signal.aborted) return;
  running.controller.abort(new HandlerAbortError(cause));
}

/** Sends results in one message; a result that cannot be cloned becomes that handler's error, the others go as they are. */
function sendResults(port: MessagePort, results: LaneResult[]): void {
  try {
    send(port, { kind: 'settled', results });
  } catch {
    const safe = results.map((result): LaneResult => {
      if (!result.ok) return result;
      try {
        structuredClone(result.value);
        return result;
      } catch (error) {
        return { serial: result.serial, ok: false, error: serializeError(new TypeError(`the handler's result cannot be sent: ${serializeError(error).message}`)) };
      }
    });
    send(port, { kind: 'settled', results: safe });
  }
}

function send(port: MessagePort, message: FromLane): void {
  port.postMessage(message);
}

function closed(port: MessagePort): Promise<void> {
  return new Promise((resolve) => {
    port.on('message', (message: ToLane) => {
      if (message.kind === 'close') {
        port.close();
        resolve();
      }
    });
  });
}

async function loadHandler(url: string): Promise<Handler<JsonValue, unknown>> {
  const module: { default?: unknown } = await import(url);
  const exported = module.default;
  if (typeof exported === 'function') return exported as Handler<JsonValue, unknown>;
  if (typeof exported === 'object' && exported !== null && 'run' in exported && typeof exported.run === 'function') {
    return exported.run as Handler<JsonValue, unknown>;
  }
  throw new SchedulerError('invalid_handler', `${url} has no default export made by defineHandler() or a function`);
}
