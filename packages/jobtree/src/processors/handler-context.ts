// The `ctx` a handler gets, whichever runner calls it: handler threads
// (lane-worker.ts) and the main thread (main-thread-runner.ts) build it here,
// so that a handler sees the same signal, the same `update` (with the
// same refusals) and the same `childResults` in both.

import type { FlowChild, JsonValue } from '@jobtree/core';
import { SchedulerError } from './errors.js';
import type { HandlerContext } from './interfaces.js';
import type { SerializedError } from './lane-protocol.js';
import type { RunSignal } from './run-signal.js';

/** The answer to a `ctx.update`: nothing when stored, else why not. */
export type UpdateReply = (error?: SerializedError & { code: string }) => void;

/** The answer to a `ctx.childResults()`: the children, else why they could not be read. */
export type ChildrenReply = (children: FlowChild[] | undefined, error?: SerializedError & { code: string }) => void;

/** Where a run's `ctx` asks whether the run is still the scheduler's, and sends its updates. */
export interface RunHost {
  /** Whether the run is still the scheduler's (an update after its end is refused without asking). */
  running(): boolean;
  /** Hands an update on; `reply` is called once the store has answered. */
  send(data: JsonValue, reply: UpdateReply): void;
  /** Asks for the run's job's children (a flow's parent); `reply` is called with them. */
  children(reply: ChildrenReply): void;
}

/**
 * A run's `ctx`. One object per run, with nothing else made until the
 * handler uses it: the signal is made on first read (see RunSignal), the
 * `update` function on first read too (bound, so a handler may take it
 * out of `ctx`). Most handlers use neither, and a run on the main thread
 * then costs this object alone.
 */
export class RunContext implements HandlerContext<JsonValue> {
  readonly #run: RunSignal;
  readonly #jobId: string;
  readonly #host: RunHost;
  #update: ((data: JsonValue) => Promise<void>) | undefined;

  constructor(run: RunSignal, jobId: string, host: RunHost) {
    this.#run = run;
    this.#jobId = jobId;
    this.#host = host;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }

  get update(): (data: JsonValue) => Promise<void> {
    this.#update ??= (data) =>
      new Promise<void>((resolve, reject) => {
        if (!this.#host.running()) {
          reject(new SchedulerError('halt', `job ${JSON.stringify(this.#jobId)} has ended`));
          return;
        }
        this.#host.send(data, (error) => {
          if (error === undefined) resolve();
          else reject(updateError(error));
        });
      });
    return this.#update;
  }

  childResults(): Promise<FlowChild[]> {
    return new Promise<FlowChild[]>((resolve, reject) => {
      this.#host.children((children, error) => {
        if (error === undefined) resolve(children ?? []);
        else reject(updateError(error));
      });
    });
  }
}

/**
 * A run's `ctx`. `running` says whether the run is still the scheduler's
 * (an update after its end is refused without asking); `send` hands an
 * update on and calls its reply once the store has answered; `readChildren`
 * asks for the job's children likewise.
 */
export function handlerContext(
  run: RunSignal,
  jobId: string,
  running: () => boolean,
  send: (data: JsonValue, reply: UpdateReply) => void,
  readChildren: (reply: ChildrenReply) => void,
): HandlerContext<JsonValue> {
  return new RunContext(run, jobId, { running, send, children: readChildren });
}

/** The error a refused `ctx.update` (or `ctx.childResults()`) rejects with: a `halt` SchedulerError when the job is no longer the processor's. */
function updateError(error: SerializedError & { code: string }): Error {
  if (error.code === 'halt') return new SchedulerError('halt', error.message);
  return Object.assign(new Error(error.message), { name: error.name, code: error.code });
}
