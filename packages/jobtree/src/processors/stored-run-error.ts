// A crashed run's error as the scheduler keeps it and a given-up job's
// error row stores it. A handler throws whatever it likes (a message with a
// whole response body in it), and the store refuses a row over
// MAX_JOB_DATA_BYTES: a give-up write refused for its size would leave the
// job running in the store after `job:failed` said it failed. So a name
// and a message are cut to a bound, and the oldest history events are
// dropped until the row fits.

import { MAX_JOB_DATA_BYTES } from '@jobtree/core';
import type { HistoryEventJson } from './interfaces.js';

/** The most characters of a run error's message kept; the rest is cut, and the cut says how much. */
export const MAX_ERROR_MESSAGE_CHARS = 4096;
/** The most characters of a run error's name kept. */
export const MAX_ERROR_NAME_CHARS = 256;

/** A given-up job's error as `Jobs.fail` is given it. */
export interface StoredRunError {
  message: string;
  name: string;
  history: HistoryEventJson[];
}

/** `text` cut to `max` characters with a note of how many were cut, or as it is when it is no longer. */
export function cutErrorText(text: string, max: number): string {
  if (text.length <= max) return text;
  // Not between the halves of a surrogate pair: a lone half would be stored escaped and read back as garbage.
  const end = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}… (${text.length - end} more characters cut)`;
}

/**
 * The error row of a job given up with `name`, `message` and `history`
 * (newest first): as it is when it fits the store's row limit, else with
 * its oldest history events dropped until it does.
 */
export function storedRunError(name: string, message: string, history: readonly HistoryEventJson[]): StoredRunError {
  const error: StoredRunError = { message, name, history: [...history] };
  let bytes = rowBytes(error);
  while (bytes > MAX_JOB_DATA_BYTES && error.history.length > 0) {
    const dropped = error.history.pop() as HistoryEventJson;
    // One event's JSON and the comma before it, if any.
    bytes -= Buffer.byteLength(JSON.stringify(dropped)) + (error.history.length > 0 ? 1 : 0);
  }
  return error;
}

function rowBytes(error: StoredRunError): number {
  return Buffer.byteLength(JSON.stringify(error));
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
