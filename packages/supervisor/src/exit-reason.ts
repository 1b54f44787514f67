// How a supervisor reads exit reasons: which ones count as abnormal (OTP's
// rule for transient children) and how a failed start becomes a reason.

import { type ExitReason, errorInfo, isExitReason } from '@jobtree/actors';
import { SupervisorError } from './errors.js';
import type { RestartType } from './interfaces.js';

/** `normal`, `shutdown` and `{ shutdown }` are the exits OTP does not call abnormal. */
export function isAbnormalExit(reason: ExitReason): boolean {
  if (reason === 'normal' || reason === 'shutdown') return false;
  return !(typeof reason === 'object' && 'shutdown' in reason);
}

/** OTP's do_restart: permanent always, transient on abnormal exits, temporary never. */
export function needsRestart(restart: RestartType, reason: ExitReason): boolean {
  if (restart === 'permanent') return true;
  if (restart === 'temporary') return false;
  return isAbnormalExit(reason);
}

/**
 * The exit reason a failed start stands for: the runtime's ActorError carries the child's reason
 * (`reason`); anything else thrown by a start function becomes `{ error }`.
 */
export function reasonFromError(error: unknown): ExitReason {
  // A nested supervisor's start failure keeps its own message (which names the child) rather than
  // passing up the bare reason of the grandchild.
  if (typeof error === 'object' && error !== null && 'reason' in error && !(error instanceof SupervisorError)) {
    const reason = (error as { reason: unknown }).reason;
    if (isExitReason(reason)) return reason;
  }
  return { error: errorInfo(error) };
}
