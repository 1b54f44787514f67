// Every error @jobtree/actors raises is an ActorError with a stable string
// `code`, so callers branch on the code and never on message text.

import type { ExitReason } from './interfaces.js';

export type ActorErrorCode =
  /** A `call` got no reply within its timeout (a late reply is dropped). */
  | 'timeout'
  /** The target was not alive (or the name not registered). */
  | 'noproc'
  /** The callee ended before replying; `reason` is its exit reason. */
  | 'exit'
  /** The callee was killed (or its host thread terminated) before replying. */
  | 'killed'
  /** A spawned actor's `init` threw or rejected; `reason` is its exit reason. */
  | 'init_failed'
  /** `register`/`spawn({ name })` with a name another live actor holds. */
  | 'name_taken'
  /** The system is shutting down and accepts no new actors. */
  | 'shutting_down'
  /** A host thread could not start (e.g. its modules failed to load). */
  | 'thread_failed'
  /** A bridge call (`ctx.core()`) found no core set, and none came within `coreWaitMs`. */
  | 'no_core'
  /** A definition, name, timeout or target that cannot be right. */
  | 'bad_argument'
  /** A handler returned what it may not (OTP's bad_return_value): `handleCall` without `{ reply }`. */
  | 'bad_return'
  /** An actor got a message it cannot take (see MalformedMessageError). */
  | 'malformed_message';

export class ActorError extends Error {
  override name = 'ActorError';
  readonly code: ActorErrorCode;
  /** The exit reason behind `exit`, `killed` and `init_failed`. */
  readonly reason: ExitReason | undefined;

  constructor(code: ActorErrorCode, message: string, reason?: ExitReason) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/**
 * What ends an actor that got a message it cannot take: one its `isMessage`
 * refuses, a cast or call it has no handler for, an unknown kind. Its exit
 * reason is `{ error: { name: 'MalformedMessage', code: 'malformed_message', … } }`.
 */
export class MalformedMessageError extends ActorError {
  override name = 'MalformedMessage';

  constructor(message: string) {
    super('malformed_message', message);
  }
}

/** The error a caller sees when the callee ends with `reason` before replying. */
export function callFailure(target: string, reason: ExitReason): ActorError {
  if (reason === 'noproc') return new ActorError('noproc', `call to ${target}: no such actor`, reason);
  if (reason === 'killed') return new ActorError('killed', `call to ${target}: the actor was killed`, reason);
  return new ActorError('exit', `call to ${target}: the actor exited (${describeReason(reason)})`, reason);
}

/** A short human-readable form of an exit reason, for error messages. */
export function describeReason(reason: ExitReason): string {
  if (typeof reason === 'string') return reason;
  if ('error' in reason) return `${reason.error.name}: ${reason.error.message}`;
  return `shutdown: ${reason.shutdown}`;
}
