// Every error @jobtree/supervisor raises is a SupervisorError with a stable
// `code`. The codes are OTP's `{error, Code}` replies of the supervisor
// module, so code written against OTP's documentation reads the same here.

import type { ActorId, ExitReason } from '@jobtree/actors';

/**
 * - `already_present`: `startChild` with the id of a spec that is kept without a process
 *   (restart it with `restartChild` or remove it with `deleteChild`).
 * - `already_started`: `startChild` with the id of a child that is running.
 * - `running`: `restartChild`/`deleteChild` of a child that is running.
 * - `restarting`: `restartChild`/`deleteChild` of a child the supervisor is restarting.
 * - `not_found`: no child with this id (or, for simple_one_for_one, no child with this ActorId);
 *   also `terminateChild`/`getChildspec` with an ActorRef on a supervisor that is not
 *   simple_one_for_one, whose children are named by spec id (as OTP answers a pid there).
 * - `simple_one_for_one`: an operation that does not apply to a simple_one_for_one supervisor
 *   (`restartChild`, `deleteChild`, `terminateChild` or `whichChild` by spec id).
 * - `start_failed`: a child failed to start; `reason` is the child's exit reason.
 * - `invalid_spec`: the supervisor spec or a child spec is malformed; also a `significant` child
 *   that is permanent or under a supervisor whose `autoShutdown` is `never`, and an `autoShutdown`
 *   other than `never` on a simple_one_for_one supervisor (OTP's bad_combination).
 * - `invalid_request`: a message to the supervisor actor that is not one of its requests.
 * - `noproc`: the supervisor is not running.
 */
export type SupervisorErrorCode =
  | 'already_present'
  | 'already_started'
  | 'running'
  | 'restarting'
  | 'not_found'
  | 'simple_one_for_one'
  | 'start_failed'
  | 'invalid_spec'
  | 'invalid_request'
  | 'noproc';

/** The serialisable form of a SupervisorError, as the supervisor actor replies it. */
export interface SupervisorErrorData {
  code: SupervisorErrorCode;
  message: string;
  childId?: string;
  reason?: ExitReason;
  actor?: ActorId;
}

export class SupervisorError extends Error {
  override readonly name = 'SupervisorError';
  readonly code: SupervisorErrorCode;
  /** The child spec id the error is about, when there is one. */
  readonly childId: string | undefined;
  /** For `start_failed`: why the child (or the supervisor) ended. */
  readonly reason: ExitReason | undefined;
  /** For `already_started`: the running child. */
  readonly actor: ActorId | undefined;

  constructor(data: SupervisorErrorData) {
    super(data.message);
    this.code = data.code;
    this.childId = data.childId;
    this.reason = data.reason;
    this.actor = data.actor;
  }

  toData(): SupervisorErrorData {
    const data: SupervisorErrorData = { code: this.code, message: this.message };
    if (this.childId !== undefined) data.childId = this.childId;
    if (this.reason !== undefined) data.reason = this.reason;
    if (this.actor !== undefined) data.actor = this.actor;
    return data;
  }
}
