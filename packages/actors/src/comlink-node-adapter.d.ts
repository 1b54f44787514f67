// comlink ships node-adapter.d.ts beside node-adapter.mjs, where NodeNext
// resolution does not look for it; this restates it for our import.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  export interface NodeEndpoint {
    postMessage(message: unknown, transfer?: readonly unknown[]): void;
    on(type: string, listener: (value: unknown) => void): void;
    off(type: string, listener: (value: unknown) => void): void;
    start?: () => void;
  }
  export default function nodeEndpoint(nep: NodeEndpoint): Endpoint;
}
