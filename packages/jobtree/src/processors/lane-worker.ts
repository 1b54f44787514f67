// One handler lane: the piscina task that runs in a worker thread for as
// long as its lane lives, running every handler the processors send it
// concurrently, of any job type: it loads each handler module once, when
// first asked, and keeps it by URL. See lane-protocol.ts for the messages and lane-status.ts for
// the shared status words.

import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { type MessagePort, threadId } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { handlerOfModule } from './define-handler.js';
import { type ChildrenReply, type UpdateReply, handlerContext } from './handler-context.js';
import type { Handler } from './interfaces.js';
import {
  type FromLane,
  type HandlerJobOf,
  type LaneTask,
  type PackedResults,
  type PackedSpells,
  RESULT_FIELDS,
  RUN_FIELDS,
  type SerializedError,
  type ToLane,
  serializeError,
  unpackRuns,
} from './lane-protocol.js';
import { LaneQueue } from './lane-queue.js';
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

/** A handler module as the lane knows it: loading, loaded, or broken. */
interface LoadedHandler {
  run: Handler<JsonValue, unknown> | undefined;
  error: SerializedError | undefined;
  /** Starts that came before the module loaded. */
  waiting: Extract<ToLane, { kind: 'start' }>[];
}

/** One processor's busy spell on this lane: its runs going, since when, and how many ended. */
interface Spell {
  running: number;
  since: number;
  ended: number;
  /** The turn of the event loop it began in (see `turn`). */
  turn: number;
}

/**
 * Turns of this thread's event loop, counted only while a spell may need
 * them: a spell that ends in the turn it began in tells the main thread
 * that its processor's runs end before any later message reaches the lane.
 */
let turn = 0;
let turnCounted = false;
const nextTurn = (): void => {
  turn++;
  turnCounted = false;
};

export default async function runLane(task: LaneTask): Promise<void> {
  const port = task.port;
  status = new Int32Array(task.status);
  Atomics.store(status, CURRENT, NO_JOB);
  const view = status;
  const ticker = setInterval(() => Atomics.add(view, TICK, 1), TICK_MS);
  const handlers = new Map<string, LoadedHandler>();
  const spells = new Map<number, Spell>();
  const running = new Map<number, RunSignal>();
  const updates = new Map<number, UpdateReply>();
  const childReads = new Map<number, ChildrenReply>();
  const queue = new LaneQueue(view);
  let nextRequest = 1;
  let results: PackedResults = [];
  let ended: PackedSpells = [];
  let flushing = false;
  let closing = false;
  let end: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    end = resolve;
  });

  const flush = (): void => {
    flushing = false;
    if (results.length === 0 && !queue.changed) return;
    sendResults(port, results, ended, queue);
    results = [];
    ended = [];
    if (closing && running.size === 0) end();
  };
  const queueFlush = (): void => {
    // Results of handlers that end in the same turn go back in one message.
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  const settle = (handler: Handler<JsonValue, unknown>, serial: number, share: number, spell: Spell, ok: boolean, outcome: unknown): void => {
    running.delete(serial);
    results.push(serial, ok, outcome);
    spell.ended++;
    // A queued run takes the ended run's place, in the same spell.
    const next = queue.take(share);
    if (next !== undefined) start(handler, share, spell, next.serial, next.job);
    if (--spell.running === 0) ended.push(share, performance.now() - spell.since, spell.ended, spell.turn === turn ? 1 : 0);
    queueFlush();
  };

  const start = (handler: Handler<JsonValue, unknown>, share: number, spell: Spell, serial: number, job: HandlerJobOf): void => {
    if (spell.running++ === 0) {
      spell.since = performance.now();
      spell.ended = 0;
      spell.turn = turn;
      if (!turnCounted) {
        turnCounted = true;
        setImmediate(nextTurn);
      }
    }
    // A run that waited for its module has its signal already (an abort may have come meanwhile).
    let run = running.get(serial);
    if (run === undefined) {
      run = new RunSignal();
      running.set(serial, run);
    }
    const ctx = handlerContext(
      run,
      job.id,
      () => running.has(serial),
      (data, reply) => {
        const request = nextRequest++;
        updates.set(request, reply);
        send(port, { kind: 'update', request, serial, data });
      },
      (reply) => {
        const request = nextRequest++;
        childReads.set(request, reply);
        send(port, { kind: 'readChildren', request, serial });
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
      (value) => settle(handler, serial, share, spell, true, value),
      (error: unknown) => settle(handler, serial, share, spell, false, serializeError(error)),
    );
  };

  const startRuns = (loaded: LoadedHandler, message: Extract<ToLane, { kind: 'start' }>): void => {
    // Queued at once, where an abort finds them while the module loads.
    if (message.ahead !== undefined) queue.push(message.share, message.type, message.ahead);
    if (loaded.run === undefined) {
      if (loaded.error === undefined) {
        // Its runs wait for the module, abortable meanwhile.
        for (let i = 0; i < message.runs.length; i += RUN_FIELDS) running.set(message.runs[i] as number, new RunSignal());
        loaded.waiting.push({ kind: 'start', url: message.url, type: message.type, share: message.share, runs: message.runs });
        return;
      }
      // A module that did not load answers each of its runs with its error.
      const error = loaded.error;
      unpackRuns(message.runs, message.type, (serial) => {
        running.delete(serial);
        results.push(serial, false, error);
      });
      returnStranded(message.share);
      queueFlush();
      return;
    }
    let spell = spells.get(message.share);
    if (spell === undefined) {
      spell = { running: 0, since: 0, ended: 0, turn: 0 };
      spells.set(message.share, spell);
    }
    const handler = loaded.run;
    const share = message.share;
    const of = spell;
    unpackRuns(message.runs, message.type, (serial, job) => start(handler, share, of, serial, job));
    returnStranded(share);
  };

  /** Runs queued for a processor with no run here would never start: they go back. */
  const returnStranded = (share: number): void => {
    if ((spells.get(share)?.running ?? 0) === 0 && queue.returnAll(share)) queueFlush();
  };

  const importing = (): boolean => {
    for (const loaded of handlers.values()) if (loaded.run === undefined && loaded.error === undefined) return true;
    return false;
  };

  const load = (url: string): LoadedHandler => {
    const known = handlers.get(url);
    if (known !== undefined) return known;
    const loaded: LoadedHandler = { run: undefined, error: undefined, waiting: [] };
    handlers.set(url, loaded);
    loadHandler(url, task.tsxApi).then(
      (run) => {
        loaded.run = run;
        send(port, { kind: 'loaded', url });
      },
      (error: unknown) => {
        loaded.error = serializeError(error);
        // Asked again later, the lane tries again (the file may have been fixed).
        handlers.delete(url);
        send(port, { kind: 'broken', url, error: loaded.error });
      },
    ).finally(() => {
      const waiting = loaded.waiting;
      loaded.waiting = [];
      for (const message of waiting) startRuns(loaded, message);
    });
    return loaded;
  };

  port.on('message', (message: ToLane) => {
    switch (message.kind) {
      case 'load':
        load(message.url);
        break;
      case 'start':
        startRuns(load(message.url), message);
        break;
      case 'abort':
        for (const serial of message.serials) {
          if (queue.drop(serial)) queueFlush();
          else running.get(serial)?.abort(message.cause);
        }
        break;
      case 'recall':
        for (const serial of message.serials) if (queue.drop(serial)) queueFlush();
        break;
      case 'updated': {
        const reply = updates.get(message.request);
        updates.delete(message.request);
        reply?.(message.error);
        break;
      }
      case 'children': {
        const reply = childReads.get(message.request);
        childReads.delete(message.request);
        reply?.(message.children, message.error);
        break;
      }
      case 'close':
        closing = true;
        // An import still going would go on past the end of the lane, and
        // the pool then terminates the thread wherever the import is (inside
        // a native addon's registration, that aborts the whole process).
        // Ended here, at a message, the thread is in no import's code.
        if (importing()) process.exit(0);
        if (running.size === 0 && !flushing) end();
        break;
    }
  });
  send(port, { kind: 'ready', threadId });
  await closed;
  clearInterval(ticker);
  port.close();
}

/**
 * Sends results, and the queue's starts and returns, in one message; a
 * result that cannot be cloned becomes that handler's error, the others go
 * as they are.
 */
function sendResults(port: MessagePort, results: PackedResults, spells: PackedSpells, queue: LaneQueue): void {
  const settled: Extract<FromLane, { kind: 'settled' }> = { kind: 'settled', results };
  if (spells.length > 0) settled.spells = spells;
  if (queue.started.length > 0) {
    settled.started = queue.started;
    queue.started = [];
  }
  if (queue.returned.length > 0) {
    settled.returned = queue.returned;
    queue.returned = [];
  }
  try {
    send(port, settled);
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
    send(port, { ...settled, results: safe });
  }
}

function send(port: MessagePort, message: FromLane): void {
  port.postMessage(message);
}

/** Whether tsx is registered in this thread (by the lane, for a TypeScript handler). */
let tsxRegistered = false;

const TYPESCRIPT_FILE = /\.(?:[cm]?ts|tsx)$/;

/**
 * Imports a handler module. The thread of a built jobtree starts with no
 * TypeScript loader: a TypeScript module (or one the import cannot find or
 * read as it is: tsx also maps `.js` to `.ts`) gets tsx registered first,
 * when the app offers it.
 */
async function importHandler(url: string, tsxApi: string | undefined): Promise<{ default?: unknown }> {
  if (tsxApi !== undefined && !tsxRegistered && TYPESCRIPT_FILE.test(new URL(url).pathname)) await registerTsx(tsxApi);
  try {
    return await import(url);
  } catch (error) {
    if (tsxApi === undefined || tsxRegistered) throw error;
    await registerTsx(tsxApi);
    return await import(url);
  }
}

async function registerTsx(tsxApi: string): Promise<void> {
  const { register } = (await import(tsxApi)) as { register(): unknown };
  register();
  tsxRegistered = true;
}

async function loadHandler(url: string, tsxApi: string | undefined): Promise<Handler<JsonValue, unknown>> {
  return handlerOfModule(await importHandler(url, tsxApi), url);
}
