// One handler lane: the piscina task that runs in a worker thread for as
// long as its lane lives, running every handler the scheduler sends it
// concurrently. See lane-protocol.ts for the messages and lane-status.ts for
// the shared status words.

import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { type MessagePort, threadId } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { HandlerAbortError, SchedulerError } from './errors.js';
import type { AbortCause, Handler, HandlerContext } from './interfaces.js';
import {
  type FromLane,
  LANE_JOB_FIELDS,
  LANE_RESULT_FIELDS,
  type LaneTask,
  type PackedResults,
  type ToLane,
  serializeError,
  unpackLaneJob,
} from './lane-protocol.js';
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

type LaneStart = ReturnType<typeof unpackLaneJob>;

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
  let results: PackedResults = [];
  /** Jobs waiting for a slot of this lane, oldest first (see the `queue` message). */
  let queue: LaneStart[] = [];
  /**
   * Running handlers not aborted: the runs that will hand their slot on.
   * With none, the queue goes back (see trim): a queued job would wait for
   * an end that never hands it a slot.
   */
  let live = 0;
  let dropped: number[] = [];
  let flushing = false;
  let closing = false;
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });

  const flush = (): void => {
    flushing = false;
    if (results.length === 0 && dropped.length === 0) return;
    sendResults(port, results, dropped);
    results = [];
    dropped = [];
    if (closing && running.size === 0) end();
  };
  const flushSoon = (): void => {
    // What happens in the same turn goes back in one message.
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  /**
   * With no live run left, the queued jobs go back to the main thread
   * unstarted: it runs them in the slots it knows are free (a run that
   * ended before they came gave its slot back to it, not to them).
   */
  const trim = (): void => {
    if (live > 0 || queue.length === 0) return;
    for (const next of queue) dropped.push(next.serial);
    queue = [];
    flushSoon();
  };
  const settle = (serial: number, ok: boolean, valueOrError: unknown): void => {
    // An aborted run's slot is the main thread's to give again (it may have
    // already): only a run that ends by itself hands its slot on.
    const aborted = running.get(serial)?.controller.signal.aborted === true;
    running.delete(serial);
    if (!aborted) live--;
    results.push(serial, ok, valueOrError);
    // The slot this run held goes to the oldest queued job at once: that
    // the main thread has no round trip to make for it is the queue's point.
    const next = closing || aborted ? undefined : queue.shift();
    if (next !== undefined) {
      results.push(next.serial, null, undefined);
      start(next);
    }
    trim();
    flushSoon();
  };

  const start = ({ serial, job }: LaneStart): void => {
    const controller = new AbortController();
    running.set(serial, { controller });
    live++;
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
      (value) => settle(serial, true, value),
      (error: unknown) => settle(serial, false, serializeError(error)),
    );
  };

  port.on('message', (message: ToLane) => {
    switch (message.kind) {
      case 'start':
        for (let i = 0; i * LANE_JOB_FIELDS < message.jobs.length; i++) start(unpackLaneJob(message.type, message.jobs, i));
        for (let i = 0; i * LANE_JOB_FIELDS < message.queue.length; i++) queue.push(unpackLaneJob(message.type, message.queue, i));
        trim();
        break;
      case 'abort': {
        const aborted = new Set(message.serials);
        // A queued job is dropped unstarted; the main thread gets it back with the results.
        const kept = queue.filter((next) => !aborted.has(next.serial));
        if (kept.length !== queue.length) {
          for (const next of queue) if (aborted.has(next.serial)) dropped.push(next.serial);
          queue = kept;
          flushSoon();
        }
        for (const serial of message.serials) if (abort(running.get(serial), message.cause)) live--;
        trim();
        break;
      }
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
        // Queued jobs will not start: they go back with the last results.
        for (const next of queue) dropped.push(next.serial);
        queue = [];
        if (dropped.length > 0) flushSoon();
        else if (running.size === 0 && !flushing) end();
        break;
    }
  });
  send(port, { kind: 'ready', threadId });
  await ended;
  clearInterval(ticker);
  port.close();
}

/** Aborts a running handler's signal; false when it is not running or was aborted already. */
function abort(running: Running | undefined, cause: AbortCause): boolean {
  if (running === undefined || running.controller.signal.aborted) return false;
  running.controller.abort(new HandlerAbortError(cause));
  return true;
}

/** Sends results in one message; a result that cannot be cloned becomes that handler's error, the others go as they are. */
function sendResults(port: MessagePort, results: PackedResults, dropped: number[]): void {
  try {
    send(port, { kind: 'settled', results, dropped });
  } catch {
    const safe = [...results];
    for (let at = 0; at < safe.length; at += LANE_RESULT_FIELDS) {
      if (safe[at + 1] !== true) continue;
      try {
        structuredClone(safe[at + 2]);
      } catch (error) {
        safe[at + 1] = false;
        safe[at + 2] = serializeError(new TypeError(`the handler's result cannot be sent: ${serializeError(error).message}`));
      }
    }
    send(port, { kind: 'settled', results: safe, dropped });
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
