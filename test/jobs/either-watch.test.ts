// eitherWatch (packages/core/src/jobs/either-watch.ts): one watch over two
// keys. Whichever way it ends (one fires, one fails, the holder cancels), both
// watches are let go: an armed watch holds its registration until its key
// changes (on FoundationDB, one of a bounded number per client).

import test from 'ava';
import { eitherWatch } from '../../packages/core/src/jobs/either-watch.js';
import type { Watch } from '../../packages/core/src/storage/interfaces.js';

/** A watch settled by hand, which counts its cancels (a cancel after it settled does nothing, as a store's). */
function handWatch(): Watch & { fire(): void; fail(error: Error): void; cancels: number } {
  let resolve!: (fired: boolean) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<boolean>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  const watch = {
    promise,
    cancels: 0,
    cancel() {
      watch.cancels += 1;
      resolve(false);
    },
    fire() {
      resolve(true);
    },
    fail(error: Error) {
      reject(error);
    },
  };
  return watch;
}

test('the first watch to fire fires the combined watch and lets the other go', async (t) => {
  const first = handWatch();
  const second = handWatch();
  const either = eitherWatch(first, second);
  second.fire();
  t.true(await either.promise);
  t.true(first.cancels > 0);
});

test('a watch that fails fails the combined watch and lets the other go', async (t) => {
  const first = handWatch();
  const second = handWatch();
  const either = eitherWatch(first, second);
  const error = new Error('too_many_watches');
  first.fail(error);
  t.is(await t.throwsAsync(either.promise), error);
  t.true(second.cancels > 0);
});

test('cancelling the combined watch cancels both and resolves it false', async (t) => {
  const first = handWatch();
  const second = handWatch();
  const either = eitherWatch(first, second);
  either.cancel();
  t.false(await either.promise);
  t.true(first.cancels > 0);
  t.true(second.cancels > 0);
});
