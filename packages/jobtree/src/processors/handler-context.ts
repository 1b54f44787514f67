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
  return {
    get signal() {
      return run.signal;
    },
    update: (data) =>
      new Promise<void>((resolve, reject) => {
        if (!running()) {
          reject(new SchedulerError('halt', `job ${JSON.stringify(jobId)} has ended`));
          return;
        }
        send(data, (error) => {
          if (error === undefined) resolve();
          else reject(updateError(error));
        });
      }),
    childResults: () =>
      new Promise<FlowChild[]>((resolve, reject) => {
        readChildren((children, error) => {
          if (error === undefined) resolve(children ?? []);
          else reject(updateError(error));
        });
      }),
  };
}

/** The error a refused `ctx.update` (or `ctx.childResults()`) rejects with: a `halt` SchedulerError when the job is no longer the processor's. */
function updateError(error: SerializedError & { code: string }): Error {
  if (error.code === 'halt') return new SchedulerError('halt', error.message);
  return Object.assign(new Error(error.message), { name: error.name, code: error.code });
}
