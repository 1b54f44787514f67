// The bridge from actors to the core object on the main thread (DESIGN §2):
// comlink over a MessagePort per thread. A bridge call is one whole method
// call on the main thread (one transaction), never one RPC per key; a method
// returning a promise (a watch) settles in the calling actor's thread.

import type { MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';

export function exposeCore(core: object, port: MessagePort): void {
  Comlink.expose(core, nodeEndpoint(port));
}

export function wrapCore<T>(port: MessagePort): Comlink.Remote<T> {
  return Comlink.wrap<T>(nodeEndpoint(port));
}
