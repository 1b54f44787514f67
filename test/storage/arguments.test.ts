// Bad arguments to the public storage API: every one is refused with a typed
// error whose code says what was wrong (never a TypeError, RangeError or a
// raw errno, never an endless loop), and a store that took a storm of them
// reopens consistent.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import {
  BackendUnavailableError,
  type Database,
  DataDirectoryError,
  DatabaseLockedError,
  FdbError,
  FdbErrorCode,
  type Transaction,
  openDatabase,
} from '@jobtree/core';
import { backends } from './backends.js';

const b = (text: string) => Buffer.from(text);
const once = { retryLimit: 0 };
/** Each a value that has broken argument checks: no usable toString, unbounded String() recursion, odd numbers. */
const nasty: unknown[] = [
  Object.create(null),
  (() => {
    let deep: unknown[] = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    return deep;
  })(),
  { toString: 1, valueOf: 2 },
  Symbol('s'),
  10n,
  Number.NaN,
  -1,
  1.5,
  Number.NEGATIVE_INFINITY,
  'x',
  {},
  [],
  null,
  () => 0,
];

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'jobtree-args-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `run` and returns the error it threw or rejected with (undefined when it succeeded). */
async function outcome(run: () => unknown): Promise<unknown> {
  try {
    await run();
    return undefined;
  } catch (error) {
    return error;
  }
}

async function expectCode(t: ExecutionContext, run: () => unknown, code: number, what: string): Promise<void> {
  const error = await outcome(run);
  t.true(error instanceof FdbError, `${what}: expected FdbError ${code}, got ${String(error)}`);
  if (error instanceof FdbError) t.is(error.code, code, `${what}: ${error.message}`);
}

test('openDatabase refuses options that are not an object, and paths that are not non-empty strings, with invalid_option_value (2006)', async (t) => {
  const asOptions = (input: unknown) => input as Parameters<typeof openDatabase>[0];
  for (const bad of [null, 's', 42, [], true]) {
    await expectCode(t, () => openDatabase(asOptions(bad)), FdbErrorCode.invalid_option_value, `options ${String(bad)}`);
  }
  for (const path of [42, '', 'a\0b', {}, Object.create(null), null]) {
    await expectCode(t, () => openDatabase(asOptions({ path })), FdbErrorCode.invalid_option_value, `path ${typeof path}`);
  }
  const error = await outcome(() => openDatabase(asOptions({ path: '' })));
  t.regex((error as Error).message, /path must be a non-empty string/);
});

test('doTransaction refuses a body that is not a function (2000) and retry limits that are not counts (2006), before running anything', async (t) => {
  const dir = tempDir(t);
  const db = await openDatabase({ path: dir });
  try {
    const asBody = (input: unknown) => input as (tx: Transaction) => void;
    for (const body of ['nope', null, undefined, 42, {}]) {
      await expectCode(t, () => db.doTransaction(asBody(body)), FdbErrorCode.client_invalid_operation, `body ${String(body)}`);
    }
    let runs = 0;
    const conflicted = () => {
      runs++;
      throw new FdbError(FdbErrorCode.not_committed, 'always');
    };
    for (const retryLimit of [Number.NaN, 'x', {}, -1, 1.5, Object.create(null), null]) {
      await expectCode(
        t,
        () => db.doTransaction(conflicted, { retryLimit } as unknown as { retryLimit: number }),
        FdbErrorCode.invalid_option_value,
        `retryLimit ${typeof retryLimit}`,
      );
    }
    t.is(runs, 0, 'no body ran');
    await expectCode(t, () => db.doTransaction(conflicted, 'x' as unknown as { retryLimit: number }), FdbErrorCode.invalid_option_value, 'options');
    await expectCode(t, () => db.doTransaction(conflicted, { retryLimit: 2 }), FdbErrorCode.not_committed, 'a valid limit');
    t.is(runs, 3, 'a limit of 2 means three attempts');
  } finally {
    await db.close();
  }
});

for (const backend of backends) {
  const title = `${backend.name}: versionstamp offsets and range limits of any shape fail with a typed error`;
  if (backend.skipReason !== undefined) {
    test.skip(title, () => {});
    continue;
  }
  test(title, async (t) => {
    const db = await backend.open();
    try {
      const template = Buffer.alloc(12);
      for (const bad of nasty) {
        const offset = bad as number;
        await expectCode(t, () => db.doTransaction((tx) => tx.setVersionstampedKey(template, offset, b('v')), once), 2000, 'key offset');
        await expectCode(t, () => db.doTransaction((tx) => tx.setVersionstampedValue(b('k'), template, offset), once), 2000, 'value offset');
        if (typeof bad === 'number' && bad === Number.POSITIVE_INFINITY) continue;
        await expectCode(
          t,
          () => db.doTransaction((tx) => tx.getRange(b('a'), b('z'), { limit: bad as number }), once),
          FdbErrorCode.invalid_option_value,
          'limit',
        );
      }
      await expectCode(
        t,
        () => db.doTransaction((tx) => tx.getRange(b('a'), b('z'), 'x' as unknown as { limit: number }), once),
        FdbErrorCode.invalid_option_value,
        'range options',
      );
    } finally {
      await backend.destroy(db);
    }
  });
}

// ------------------------------------------------------------------ fuzz

/** Bytes most of the time (so calls get past the first check), anything else otherwise. */
const bytesOrNot = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ minLength: 0, maxLength: 16 }) },
  { weight: 1, arbitrary: fc.constantFrom(new Uint8Array([0xff]), new Uint8Array([0xff, 1]), new Uint8Array(10_001)) },
  { weight: 2, arbitrary: fc.anything() },
  { weight: 1, arbitrary: fc.constantFrom(...nasty) },
);
const numberOrNot = fc.oneof(
  fc.integer({ min: -2, max: 20 }),
  fc.double(),
  fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }),
  fc.anything(),
  fc.constantFrom(...nasty),
);
const optionsOrNot = fc.oneof(fc.record({ limit: numberOrNot, reverse: fc.anything() }, { requiredKeys: [] }), fc.anything());

type Call = { method: keyof Transaction; args: unknown[] };
const call: fc.Arbitrary<Call> = fc.oneof(
  fc.tuple(bytesOrNot).map((args) => ({ method: 'get' as const, args })),
  fc.tuple(bytesOrNot, bytesOrNot, optionsOrNot).map((args) => ({ method: 'getRange' as const, args })),
  fc.tuple(bytesOrNot, bytesOrNot).map((args) => ({ method: 'set' as const, args })),
  fc.tuple(bytesOrNot).map((args) => ({ method: 'clear' as const, args })),
  fc.tuple(bytesOrNot, bytesOrNot).map((args) => ({ method: 'clearRange' as const, args })),
  fc.tuple(bytesOrNot).map((args) => ({ method: 'addReadConflictKey' as const, args })),
  fc.tuple(bytesOrNot, bytesOrNot).map((args) => ({ method: 'addReadConflictRange' as const, args })),
  fc.tuple(bytesOrNot).map((args) => ({ method: 'addWriteConflictKey' as const, args })),
  fc.tuple(bytesOrNot, numberOrNot).map((args) => ({ method: 'atomicAdd' as const, args })),
  fc.tuple(bytesOrNot, numberOrNot, bytesOrNot).map((args) => ({ method: 'setVersionstampedKey' as const, args })),
  fc.tuple(bytesOrNot, bytesOrNot, numberOrNot).map((args) => ({ method: 'setVersionstampedValue' as const, args })),
  fc.tuple(bytesOrNot).map((args) => ({ method: 'watch' as const, args })),
);

/** Whether `error` is one the storage API may raise for bad input. */
function typed(error: unknown): boolean {
  return (
    error instanceof FdbError ||
    error instanceof DatabaseLockedError ||
    error instanceof DataDirectoryError ||
    error instanceof BackendUnavailableError
  );
}

const counter = b('\x00fuzz-commits');

/** Whether a fuzzed call could change the commit counter (those are skipped, so the count stays exact). */
function touchesCounter({ method, args }: Call): boolean {
  const [first, second] = args;
  if (method === 'clearRange') {
    return (
      first instanceof Uint8Array &&
      second instanceof Uint8Array &&
      Buffer.compare(first, counter) <= 0 &&
      Buffer.compare(counter, second) < 0
    );
  }
  const writes = ['set', 'clear', 'atomicAdd', 'setVersionstampedValue'];
  return writes.includes(method) && first instanceof Uint8Array && Buffer.from(first).equals(counter);
}

test('fuzz: any arguments to any transaction method give a typed error or work, and the store reopens consistent', async (t) => {
  const dir = tempDir(t);
  let db: Database = await openDatabase({ path: dir });
  let commits = 0;
  const untyped: string[] = [];
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 12 }), numberOrNot, async (calls, retryLimit) => {
        const committed = await outcome(() =>
          db.doTransaction(
            async (tx) => {
              for (const fuzzed of calls) {
                if (touchesCounter(fuzzed)) continue;
                const { method, args } = fuzzed;
                const error = await outcome(() => (tx[method] as (...a: unknown[]) => unknown)(...args));
                if (error !== undefined && !typed(error)) untyped.push(`${method}: ${String(error)}`);
              }
              tx.atomicAdd(counter, 1);
            },
            { retryLimit: 0 },
          ),
        );
        if (committed === undefined) commits++;
        else if (!typed(committed)) untyped.push(`commit: ${String(committed)}`);
        // doTransaction's own arguments: a bad retry limit is refused, a good one runs.
        const limited = await outcome(() => db.doTransaction(() => undefined, { retryLimit } as { retryLimit: number }));
        if (limited !== undefined && !typed(limited)) untyped.push(`retryLimit: ${String(limited)}`);
        return untyped.length === 0;
      }),
      { numRuns: 300 },
    );
    t.deepEqual(untyped, []);
    const everything = async (current: Database) =>
      current.doTransaction((tx) => tx.getRange(Buffer.alloc(0), Buffer.from([0xff])));
    const before = await everything(db);
    await db.close();
    db = await openDatabase({ path: dir });
    const after = await everything(db);
    t.deepEqual(after, before, 'the store reads the same after reopening');
    const stored = after.find((entry) => entry.key.equals(counter));
    t.is(stored?.value.readBigUInt64LE() ?? 0n, BigInt(commits), 'every acknowledged commit is there, once');
  } finally {
    await db.close();
  }
});

test('fuzz: any options to openDatabase give a typed error or a working store', async (t) => {
  const dir = tempDir(t);
  const untyped: string[] = [];
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.anything(),
        fc.record({ path: fc.oneof(fc.anything(), fc.constantFrom(join(dir, 'a'), join(dir, 'b.db'), '', '\0')) }),
        fc.constantFrom(...nasty),
      ),
      async (options) => {
        // A usable path outside the scratch directory (or none: the default) would create folders where the test runs.
        const path = (options as { path?: unknown } | null)?.path;
        const wouldCreate =
          options === undefined ||
          (typeof options === 'object' &&
            options !== null &&
            !Array.isArray(options) &&
            (path === undefined || (typeof path === 'string' && path !== '' && !path.includes('\0') && !path.startsWith(dir))));
        if (wouldCreate) return true;
        let db: Database | undefined;
        const error = await outcome(async () => {
          db = await openDatabase(options as Parameters<typeof openDatabase>[0]);
        });
        if (error !== undefined && !typed(error)) untyped.push(String(error));
        await db?.close();
        return untyped.length === 0;
      },
    ),
    { numRuns: 200 },
  );
  t.deepEqual(untyped, []);
});
