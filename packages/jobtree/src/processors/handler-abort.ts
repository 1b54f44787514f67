// Why a handler's signal aborted, as a type both the public interfaces and
// the error classes use (kept apart so that neither imports the other).

/** Why a handler's `ctx.signal` aborted (its `reason` is a {@link HandlerAbort}). */
export type AbortCause = 'cancel' | 'rotation' | 'shutdown' | 'timeout';

/** The reason object of an aborted `ctx.signal`. */
export interface HandlerAbort {
  readonly name: 'AbortError';
  readonly cause: AbortCause;
  readonly message: string;
}
