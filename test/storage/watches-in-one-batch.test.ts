// Watches of the embedded engine fire on the last value a durable batch
// leaves under their key, whether few keys are watched (each change's key
// is compared with them) or many (the batch's map of changes is built).

import test from 'ava';
import { openTempDatabase } from './temp-database.js';

const b = (text: string): Buffer => Buffer.from(text);

function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

for (const watchedKeys of [2, 12]) {
  test(`with ${watchedKeys} keys watched, a batch that changes a watched key and puts it back fires only the watches of keys it left changed`, async (t) => {
    const db = await openTempDatabase(t, `watches-${watchedKeys}`);
    const keys = Array.from({ length: watchedKeys }, (_, index) => b(`watched-${index}`));
    await db.doTransaction((tx) => {
      for (const key of keys) tx.set(key, b('before'));
    });
    const watches = await db.doTransaction(async (tx) => {
      for (const key of keys) await tx.get(key);
      return keys.map((key) => tx.watch(key));
    });
    // Committed in one turn, the two transactions share a batch: the first changes every key, the second puts the first back.
    await Promise.all([
      db.doTransaction((tx) => {
        for (const key of keys) tx.set(key, b('after'));
      }),
      db.doTransaction((tx) => tx.set(keys[0] as Buffer, b('before'))),
    ]);
    for (const watch of watches.slice(1)) t.true(await watch.promise);
    t.false(await settlesWithin((watches[0] as { promise: Promise<boolean> }).promise, 200));
    (watches[0] as { cancel(): void }).cancel();
  });
}

test('with few keys watched, a batch fires a watch only on its own key, not on keys of its length that share its first or last byte', async (t) => {
  const db = await openTempDatabase(t, 'watches-same-length');
  const watched = b('watch-key-A');
  const sameEnd = b('watch-kez-A');
  const sameStart = b('watch-key-B');
  await db.doTransaction((tx) => {
    tx.set(watched, b('before'));
    tx.set(b('other-key'), b('before'));
  });
  const [watch, other] = await db.doTransaction(async (tx) => {
    await tx.get(watched);
    await tx.get(b('other-key'));
    return [tx.watch(watched), tx.watch(b('other-key'))];
  });
  await db.doTransaction((tx) => {
    tx.set(sameEnd, b('after'));
    tx.set(sameStart, b('after'));
  });
  t.false(await settlesWithin(watch.promise, 200));
  await db.doTransaction((tx) => {
    tx.set(sameEnd, b('again'));
    tx.set(watched, b('after'));
    tx.set(sameStart, b('again'));
  });
  t.true(await watch.promise);
  other.cancel();
});
