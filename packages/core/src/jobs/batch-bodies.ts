// One attempt of a write batch (see write-batcher.ts): every call's body in
// the shared transaction, then the accepts parked on what they enqueued.

import { JobsError } from '../errors.js';
import type { Transaction } from '../storage/interfaces.js';
import type { Settled } from './interfaces.js';
import type { Handover } from './parked-accepts.js';
import type { QueuedCall } from './queued-call.js';
import { SharedReads } from './shared-reads.js';
import { discardFlowWork } from './flow-work.js';
import { runFlowWork } from './job-flows.js';
import type { BodyOutcomes, BodyRequest } from './write-requests.js';

/**
 * Runs every body of a batch in `tx`, concurrently (they touch different
 * jobs). Waits for all of them before it fails: a body still running when
 * the attempt is retried would write into the retry. Then serves the
 * accepts parked on what they enqueued, with the user versions after theirs.
 */
export async function runBodies(
  tx: Transaction,
  batch: readonly QueuedCall[],
  handover: Handover | undefined,
): Promise<Settled<unknown>[]> {
  handover?.begin();
  discardFlowWork(tx);
  const reads = new SharedReads(tx, handover);
  // One promise for the whole batch, not a `then` and a Promise.all slot per call.
  const bodies = new BodiesRun(batch.length);
  // The reads that can be made at once come first: a read after the
  // transaction's first write looks through its buffered writes too.
  for (let userVersion = 0; userVersion < batch.length; userVersion++) (batch[userVersion] as QueuedCall).request.readFirst?.(tx, reads);
  for (let userVersion = 0; userVersion < batch.length; userVersion++) {
    const { request } = batch[userVersion] as QueuedCall;
    if (request.settleInto !== undefined) void request.settleInto(tx, userVersion, reads, bodies);
    else void runBody(request, tx, userVersion, reads, bodies);
  }
  const outcomes = await bodies.done;
  // The first error that is not a call's own (a storage error) fails the transaction.
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected' && !(outcome.reason instanceof JobsError)) throw outcome.reason;
  }
  // What the calls' ends of flow jobs left to do to their parents and children (job-flows.ts), one after the other.
  const flowWork = runFlowWork(tx, reads);
  if (flowWork !== undefined) await flowWork;
  if (handover !== undefined) {
    // The counters first: a take for a parked accept reads the running
    // counts the calls' finishes lowered (see parked-accepts.ts).
    reads.writeOnceWrites();
    await handover.serve(tx, batch.length, reads);
    handover.serveWhenVisible(tx);
  }
  reads.writeOnceWrites();
  reads.writeEndedRuns();
  return outcomes;
}

/** The outcomes of a batch's bodies, and one promise for when the last has settled. */
class BodiesRun implements BodyOutcomes {
  readonly outcomes: Settled<unknown>[];
  readonly done: Promise<Settled<unknown>[]>;
  #left: number;
  #resolve: ((outcomes: Settled<unknown>[]) => void) | undefined;

  constructor(count: number) {
    this.outcomes = new Array<Settled<unknown>>(count);
    this.#left = count;
    this.done = count === 0 ? Promise.resolve(this.outcomes) : new Promise((resolve) => (this.#resolve = resolve));
  }

  settle(index: number, outcome: Settled<unknown>): void {
    this.outcomes[index] = outcome;
    this.#left -= 1;
    if (this.#left === 0) this.#resolve?.(this.outcomes);
  }
}

/** Runs one call's body and records its outcome; never rejects (a throw is the call's outcome). */
async function runBody(request: BodyRequest<unknown>, tx: Transaction, userVersion: number, reads: SharedReads, bodies: BodiesRun): Promise<void> {
  let outcome: Settled<unknown>;
  try {
    outcome = { status: 'fulfilled', value: await request.body(tx, userVersion, reads) };
  } catch (error) {
    outcome = { status: 'rejected', reason: error as Error };
  }
  bodies.settle(userVersion, outcome);
}
