// The bridge from actors to the core object on the main thread:
// comlink over a MessagePort per thread. A bridge call is one whole method
// call on the main thread (one transaction), never one RPC per key; a method
// returning a promise (a watch) settles in the calling actor's thread.

import type { MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { ActorError, type ActorErrorCode } from './errors.js';

type ThrowHandler = Comlink.TransferHandler<{ value: unknown }, { isError: boolean; value: Record<string, unknown> }>;

// comlink sends a thrown Error as name, message and stack only; the core's
// errors are told apart by `code` (JobsError 'halt', FDB 1020), so the own
// primitive fields of an error cross the bridge too.
const original = Comlink.transferHandlers.get('throw') as ThrowHandler | undefined;
if (original !== undefined) {
  const keepCodes: ThrowHandler = {
    canHandle: (value): value is { value: unknown } => original.canHandle(value),
    serialize(thrown) {
      const [serialized, transfer] = original.serialize(thrown);
      const error = thrown.value;
      if (serialized.isError && error instanceof Error) {
        for (const [key, field] of Object.entries(error)) {
          if (field === null || ['string', 'number', 'boolean'].includes(typeof field)) serialized.value[key] = field;
        }
      }
      return [serialized, transfer];
    },
    deserialize(serialized) {
      // The runtime's own error (no_core) arrives as itself; any other keeps its fields on an Error.
      const value = serialized.value;
      if (serialized.isError && value.name === 'ActorError' && typeof value.code === 'string') {
        const error = new ActorError(value.code as ActorErrorCode, String(value.message));
        if (typeof value.stack === 'string') error.stack = value.stack;
        throw error;
      }
      return original.deserialize(serialized);
    },
  };
  Comlink.transferHandlers.set('throw', keepCodes as Comlink.TransferHandler<unknown, unknown>);
}

export function exposeCore(core: object, port: MessagePort): void {
  Comlink.expose(core, nodeEndpoint(port));
}

export function wrapCore<T>(port: MessagePort): Comlink.Remote<T> {
  return Comlink.wrap<T>(nodeEndpoint(port));
}
