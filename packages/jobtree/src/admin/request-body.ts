// Reads a JSON request body with a size limit; every way it can be wrong is
// an AdminError `bad_request` or `payload_too_large`, never a crash (nor an
// error in the app's log: a body cut short is the client's doing).

import type { IncomingMessage } from 'node:http';
import { AdminError } from './errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** The body as a JSON object ({} when empty). */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    req.resume();
    throw new AdminError('payload_too_large', `the body is ${declared} bytes; the limit is ${limit}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > limit) throw new AdminError('payload_too_large', `the body is over ${limit} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (error instanceof AdminError) throw error;
    // The client went away (or timed out) mid-body: its mistake, not the server's.
    throw new AdminError('bad_request', `the body ended before it was complete: ${(error as Error).message}`, { cause: error });
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AdminError('bad_request', `the body is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new AdminError('bad_request', 'the body is a JSON object');
  return value as Record<string, unknown>;
}
