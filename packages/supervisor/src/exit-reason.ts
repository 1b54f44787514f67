// How a supervisor reads exit reasons: which ones count as abnormal (OTP's
// rule for transient children) and how a failed start becomes a reason.

import type { ErrorInfo, ExitReason } from '@jobtree/actors';
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

function isErrorInfo(value: unknown): value is ErrorInfo {
  if (typeof value !== 'object' || value === null) return false;
  const info = value as Record<string, unknown>;
  return typeof info.name === 'string' && typeof info.message === 'string';
}

export function isExitReason(value: unknown): value is ExitReason {
  if (value === 'normal' || value === 'shutdown' || value === 'killed' || value === 'noproc') return true;
  if (typeof value !== 'object' || value === null) return false;
  const shape = value as Record<string, unknown>;
  if ('error' in shape) return isErrorInfo(shape.error);
  return typeof shape.shutdown === 'string';
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
  if (error instanceof Error) {
    const info: ErrorInfo = { name: error.name, message: error.message };
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') info.code = code;
    if (error.stack !== undefined) info.stack = error.stack;
    return { error: info };
  }
  return { error: { name: 'Error', message: String(error) } };
}
