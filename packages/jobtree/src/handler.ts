// `jobtree/handler`: what a handler module needs, and nothing heavier. A
// handler thread loads only what its module imports, so a module importing
// `jobtree` would load the whole package (the store, its native addon, the
// app and the admin code) in every thread; this entry loads a few small
// modules. The main entry re-exports these very classes, so `instanceof`
// holds whichever entry a handler imported them from.

export { defineHandler } from './processors/define-handler.js';
export { HandlerAbortError, SchedulerError } from './processors/errors.js';
export { NonRetryableError } from './processors/non-retryable-error.js';
export type { SchedulerErrorCode } from './processors/errors.js';
export type {
  AbortCause,
  Handler,
  HandlerAbort,
  HandlerContext,
  HandlerDefinition,
  HandlerFor,
  HandlerJob,
} from './processors/interfaces.js';
