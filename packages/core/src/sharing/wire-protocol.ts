// The messages between the processes of one store. A connection opens with
// a hello from the client and a welcome (or a refusal) from the owner, both
// naming the protocol and its version, so that a process of another version
// gets a clear error instead of misread calls. Then the client sends calls
// (a method of the jobs API by name, with its arguments) and cancels, and
// the owner answers each call once and pushes events (watches,
// subscriptions) on named channels.

import { BackendUnavailableError, DataDirectoryError, FdbError, JobsError, type JobsErrorCode } from '../errors.js';

export const PROTOCOL_NAME = 'jobtree-store';
/** Raised whenever a message's shape or meaning changes. */
export const PROTOCOL_VERSION = 1;

export interface Hello {
  protocol: typeof PROTOCOL_NAME;
  version: number;
  pid: number;
}

export type Welcome = { protocol: typeof PROTOCOL_NAME; version: number; pid: number } | { refused: string; version?: number };

/** Client to owner. */
export type ClientMessage =
  /** A call: [kind, call id, method, arguments]. */
  | [kind: 0, id: number, method: string, args: unknown[]]
  /** Cancels a call still waiting (an accept): [kind, call id]. */
  | [kind: 1, id: number];

/**
 * What the owner knows of an answer beyond its value, as a fourth element
 * of its result (a peer that does not know a note ignores it):
 * `emptied_queue`, on an `acceptMany` answer, that the accept most likely
 * left its type's queue empty (see acceptEmptiedQueue), so the caller need
 * not look again at once.
 */
export type AnswerNote = 'emptied_queue';

/** Owner to client. */
export type OwnerMessage =
  | [kind: 2, id: number, value: unknown, note?: AnswerNote]
  | [kind: 3, id: number, error: WireError]
  /** An event on a channel the client opened (a watch, a subscription). */
  | [kind: 4, channel: string, payload: unknown];

export const CALL = 0;
export const CANCEL = 1;
export const RESULT = 2;
export const FAILURE = 3;
export const PUSH = 4;

/** A served method's answer with a note for the caller's process (see AnswerNote). */
export class NotedAnswer {
  constructor(
    readonly value: unknown,
    readonly note: AnswerNote,
  ) {}
}

/** An error as it crosses: enough to rebuild the class it was thrown as. */
export interface WireError {
  name: string;
  message: string;
  code?: string | number;
}

export function toWireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
  };
}

/** The error a call rejects with in the client: the owner's class, code and message. */
export function fromWireError(wire: WireError): Error {
  let error: Error;
  if (wire.name === 'JobsError' && typeof wire.code === 'string') error = new JobsError(wire.code as JobsErrorCode, '');
  else if (wire.name === 'FdbError' && typeof wire.code === 'number') error = new FdbError(wire.code);
  else if (wire.name === 'DataDirectoryError') error = new DataDirectoryError('', '');
  else if (wire.name === 'BackendUnavailableError') error = new BackendUnavailableError('');
  else {
    error = new Error('');
    error.name = wire.name;
    if (wire.code !== undefined) Object.defineProperty(error, 'code', { value: wire.code, enumerable: true });
  }
  // The owner's message, word for word (the constructors above add prefixes).
  Object.defineProperty(error, 'message', { value: wire.message, configurable: true, writable: true });
  return error;
}
