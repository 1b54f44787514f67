// Every error the scheduler and its processors raise is a SchedulerError
// with a stable `code`.

import type { AbortCause, HandlerAbort } from './handler-abort.js';

/**
 * - `invalid_option`: a scheduler or processor option is out of range or of the wrong type.
 * - `invalid_handler`: the handler module does not export a handler function.
 * - `stopped`: `reschedule` on a scheduler that is stopping or stopped.
 * - `not_found`: the scheduler does not track a job with this id.
 * - `halt`: (inside a handler) the job is no longer this processor's: it was removed or taken over.
 */
export type SchedulerErrorCode =
  | 'invalid_option'
  | 'invalid_handler'
  | 'stopped'
  | 'not_found'
  | 'halt';

export class SchedulerError extends Error {
  override readonly name = 'SchedulerError';
  readonly code: SchedulerErrorCode;

  constructor(code: SchedulerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Why a handler's signal aborted: its `cause` says what stopped the job. */
export class HandlerAbortError extends Error implements HandlerAbort {
  override readonly name = 'AbortError';
  override readonly cause: AbortCause;

  constructor(cause: AbortCause) {
    super(ABORT_MESSAGES[cause]);
    this.cause = cause;
  }
}

const ABORT_MESSAGES: Record<AbortCause, string> = {
  cancel: 'the job was removed',
  rotation: 'the job was rotated out to give its slot to a waiting job; it will run again',
  shutdown: 'the scheduler is stopping; the job will run again',
  timeout: 'the run took longer than its maxRunMs; it counts as a failed attempt',
};
