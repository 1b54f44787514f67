// One handler lane: the piscina task that runs in a worker thread for as
// long as its lane lives, running every handler the scheduler sends it
// concurrently. See lane-protocol.ts for the messages and lane-status.ts for
// the shared status words.

import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { type MessagePort, threadId } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { loadHandler } from './define-handler.js';
import { type UpdateReply, handlerContext } from './handler-context.js';
import type { Handler } from './interfaces.js';
import {
  type BusySpell,
  type FromLane,
  type HandlerJobOf,
  type LaneTask,
  type PackedResults,
  RESULT_FIELDS,
  type ToLane,
  serializeError,
  unpackRuns,
} from './lane-protocol.js';
import { CURRENT, NO_JOB, TICK, TICK_MS } from './lane-status.js';
import { RunSignal } from './run-signal.js';

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
  const running = new Map<number, RunSignal>();
  const updates = new Map<number, UpdateReply>();
  let nextRequest = 1;
  let results: PackedResults = [];
  // The lane's busy spell: since when it has had runs, how many ended, and the last spell that ended (to report).
  let spellStart = 0;
  let spellRuns = 0;
  let spell: BusySpell | undefined;
  let flushing = false;
  let closing = false;
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });

  const flush = (): void => {
    flushing = false;
    if (results.length === 0) return;
    sendResults(port, results, spell);
    results = [];
    spell = undefined;
    if (closing && running.size === 0) end();
  };
  const settle = (serial: number, ok: boolean, outcome: unknown): void => {
    running.delete(serial);
    results.push(serial, ok, outcome);
    spellRuns++;
    if (running.size === 0) spell = { ms: performance.now() - spellStart, runs: spellRuns };
    // Results of handlers that end in the same turn go back in one message.
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };

  const start = (serial: number, job: HandlerJobOf): void => {
    if (running.size === 0) {
      spellStart = performance.now();
      spellRuns = 0;
    }
    const run = new RunSignal();
    running.set(serial, run);
    const ctx = handlerContext(
      run,
      job.id,
      () => running.has(serial),
      (data, reply) => {
        const request = nextRequest++;
        updates.set(request, reply);
        send(port, { kind: 'update', request, serial, data });
      },
    );
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
        unpackRuns(message.runs, task.jobType, start);
        break;
      case 'abort':
        for (const serial of message.serials) running.get(serial)?.abort(message.cause);
        break;
      case 'updated': {
        const reply = updates.get(message.request);
        updates.delete(message.request);
        reply?.(message.error);
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

/** Sends results in one message; a result that cannot be cloned becomes that handler's error, the others go as they are. */
function sendResults(port: MessagePort, results: PackedResults, spell: BusySpell | undefined): void {
  try {
    send(port, spell === undefined ? { kind: 'settled', results } : { kind: 'settled', results, spell });
  } catch {
    const safe = results.slice();
    for (let i = 0; i < safe.length; i += RESULT_FIELDS) {
      if (safe[i + 1] !== true) continue;
      try {
        structuredClone(safe[i + 2]);
      } catch (error) {
        safe[i + 1] = false;
        safe[i + 2] = serializeError(new TypeError(`the handler's result cannot be sent: ${serializeError(error).message}`));
      }
    }
    send(port, spell === undefined ? { kind: 'settled', results: safe } : { kind: 'settled', results: safe, spell });
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
