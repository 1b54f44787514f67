// A read's age check must use the clock read for that read, wherever the
// read runs. An earlier version reused one clock reading per "turn",
// numbered by a microtask queued by the first read that asked; a microtask
// already queued before that read (the continuation of an `await` in another
// async function, a `.then` callback, a nextTick callback) ran before the
// number changed, so a read there skipped the 5-second check, and a
// read-only transaction (whose commit checks no age) returned data read after
// its life had ended. Now every public read reads the clock.
// The engine runs on a fake clock (the `now` option) that the code between
// reads moves, as a long synchronous computation would. The tests run one
// at a time, so that no other test's reads change the order of microtasks.

import test from 'ava';
import { attempt, isTooOld, openOnFakeClock } from './fake-clock-database.js';

const b = (s: string) => Buffer.from(s);
const LIFE_MS = 5_000;

/** A read's error, or 'read' when it succeeded. */
async function outcomeOf(read: Promise<Buffer | undefined>): Promise<unknown> {
  try {
    await read;
    return 'read';
  } catch (error) {
    return error;
  }
}

test.serial('a read after an await in a helper fails as too old once the life has passed, though a read of another stretch began that checkpoint', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  let late: unknown;
  await attempt(db, async (tx) => {
    await tx.get(b('k')); // takes the read version
    // Two async steps in parallel, as Promise.all over helpers makes them.
    const helper = (async () => {
      await null;
      clock.now += LIFE_MS + 1; // a long synchronous computation
      return outcomeOf(tx.get(b('j')));
    })();
    const [helperRead] = await Promise.all([helper, tx.get(b('i'))]);
    late = helperRead;
  });
  t.true(isTooOld(late), `the read 5001 ms after the read version gave ${String(late)}`);
});

test.serial('a read in a then-callback queued before another read fails as too old once the life has passed', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  let late: unknown;
  await attempt(db, async (tx) => {
    await tx.get(b('k'));
    const callback = Promise.resolve().then(() => {
      clock.now += LIFE_MS + 1;
      return outcomeOf(tx.get(b('j')));
    });
    void tx.get(b('i'));
    late = await callback;
  });
  t.true(isTooOld(late), `the read 5001 ms after the read version gave ${String(late)}`);
});

test.serial('a read in a nextTick callback fails as too old once the life has passed, though a read ran in the callback that queued it', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  let late: unknown;
  await attempt(db, async (tx) => {
    await tx.get(b('k'));
    // A macrotask (an I/O or timer callback, say) that reads and defers
    // more work with process.nextTick, as streams and emitters do: the
    // nextTick queue runs before the microtask that numbers the next turn.
    late = await new Promise<unknown>((resolve) => {
      setImmediate(() => {
        void tx.get(b('i'));
        process.nextTick(() => {
          clock.now += LIFE_MS + 1;
          resolve(outcomeOf(tx.get(b('j'))));
        });
      });
    });
  });
  t.true(isTooOld(late), `the read 5001 ms after the read version gave ${String(late)}`);
});

test.serial('a read-only transaction does not return what it read after its life had ended', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  await db.doTransaction((tx) => tx.set(b('j'), b('old')));
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    const helper = (async () => {
      await null;
      clock.now += LIFE_MS + 1;
      return tx.get(b('j'));
    })();
    const [value] = await Promise.all([helper, tx.get(b('i'))]);
    return value?.toString();
  });
  t.true(isTooOld(outcome), `the transaction gave ${String(outcome)}`);
});

test.serial('a read after an await with no other read in between fails once the life has passed', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  let late: unknown;
  await attempt(db, async (tx) => {
    await tx.get(b('k'));
    await null;
    clock.now += LIFE_MS + 1;
    late = await outcomeOf(tx.get(b('j')));
  });
  t.true(isTooOld(late), String(late));
});

test.serial('a write transaction whose reads reused a stale clock reading still fails at commit', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    const helper = (async () => {
      await null;
      clock.now += LIFE_MS + 1;
      return outcomeOf(tx.get(b('j')));
    })();
    await Promise.all([helper, tx.get(b('i'))]);
    tx.set(b('w'), b('late'));
  });
  t.true(isTooOld(outcome), String(outcome));
  t.is(await db.doTransaction((tx) => tx.get(b('w'))), undefined);
});

test.serial('reads within the life succeed however they interleave with awaits', async (t) => {
  const { db, clock } = openOnFakeClock(t, 'read-age-continuations');
  const outcome = await attempt(db, async (tx) => {
    await tx.get(b('k'));
    const helper = (async () => {
      await null;
      clock.now += LIFE_MS; // exactly the life: not past it
      return (await tx.get(b('j'))) ?? 'absent';
    })();
    const [value] = await Promise.all([helper, tx.get(b('i'))]);
    return value;
  });
  t.is(outcome, 'absent');
});
