// Exit reasons cross threads by structured clone, so an Error becomes a plain
// ErrorInfo first: a class instance would lose its prototype on the way.

import type { ErrorInfo, ExitReason } from './interfaces.js';

/** The plain, cloneable description of anything thrown. */
export function errorInfo(thrown: unknown): ErrorInfo {
  if (thrown instanceof Error) {
    const info: ErrorInfo = { name: thrown.name, message: thrown.message };
    const code = (thrown as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') info.code = code;
    if (thrown.stack !== undefined) info.stack = thrown.stack;
    return info;
  }
  return { name: 'Error', message: typeof thrown === 'string' ? thrown : safeString(thrown) };
}

/** The exit reason of an actor whose handler threw `thrown`. */
export function crashReason(thrown: unknown): ExitReason {
  return { error: errorInfo(thrown) };
}

/** The exit reason of an actor that got a message it cannot take. */
export function malformedReason(detail: string): ExitReason {
  return { error: { name: 'MalformedMessage', code: 'malformed_message', message: detail } };
}

/** Checks an exit reason handed in by user code (`exit`, `stop`). */
export function isExitReason(value: unknown): value is ExitReason {
  if (value === 'normal' || value === 'shutdown' || value === 'killed' || value === 'noproc') return true;
  if (typeof value !== 'object' || value === null) return false;
  const shape = value as { error?: unknown; shutdown?: unknown };
  if (typeof shape.shutdown === 'string') return true;
  const error = shape.error as { name?: unknown; message?: unknown } | undefined;
  return typeof error === 'object' && error !== null && typeof error.name === 'string' && typeof error.message === 'string';
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
