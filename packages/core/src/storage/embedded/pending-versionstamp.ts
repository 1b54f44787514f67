// What `getVersionstamp()` of an embedded transaction hands out: a promise
// of the commit's versionstamp, settled once the transaction has committed
// (or rejected when it did not, or had no writes).

export class PendingVersionstamp {
  readonly promise: Promise<Buffer>;
  readonly resolve: (stamp: Buffer) => void;
  readonly reject: (error: unknown) => void;

  constructor() {
    let resolve!: (stamp: Buffer) => void;
    let reject!: (error: unknown) => void;
    this.promise = new Promise<Buffer>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.resolve = resolve;
    this.reject = reject;
    // Usually awaited only after doTransaction resolves; an attempt that is
    // retried rejects it, and nobody may be listening.
    this.promise.catch(() => {});
  }
}
