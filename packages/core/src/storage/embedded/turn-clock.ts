// When a transaction's reads look at the clock. Every read checks the
// transaction's age (5 s past its read version: transaction_too_old), and
// `Date.now()` costs about 47 ns on this machine: with a few reads per job,
// 1.8% of the main thread in the 100,000-job batched drain, where an accept
// reads hundreds of keys in one go. So a transaction reads the clock for its
// age checks once per turn (a stretch of synchronous code, which ends at the
// next microtask checkpoint: an `await` always starts a new one), and again
// after every CLOCK_REUSES reads within one turn, so that a long synchronous
// loop of reads still fails once it has run past the life. Taking the read
// version and committing always read the clock itself.

/** Reads of one transaction that may use its last clock reading within one turn. */
export const CLOCK_REUSES = 64;

let turn = 0;
let advanceQueued = false;

function advance(): void {
  turn++;
  advanceQueued = false;
}

/**
 * A number that stays the same for the synchronous code running now and
 * changes once it has ended (at the next microtask checkpoint), shared by
 * every transaction: one queued microtask per turn that asks, none otherwise.
 */
export function currentTurn(): number {
  if (!advanceQueued) {
    advanceQueued = true;
    queueMicrotask(advance);
  }
  return turn;
}
