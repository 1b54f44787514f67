// Serializability for a transaction that commits a few batches (or many)
// behind its read version: the resolver checks it against each newer
// batch's write sets directly when they are few, through its key index when
// they are many, and compacts batches kept for old readers to their keys
// after a delay. Whichever way, every kind of write to what the transaction
// read (set, clear, range clear, atomic add, versionstamped value or key,
// write-conflict key) makes its commit fail with not_committed (1020), and
// a snapshot read never does.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FdbError, FdbErrorCode } from '@jobtree/core';
import type { Transaction } from '@jobtree/core';
import { ConflictLog } from '../../packages/core/src/storage/embedded/conflict-log.js';
import { EmbeddedDatabase } from '../../packages/core/src/storage/embedded/embedded-database.js';
import { deferred } from '../deferred.js';

const b = (text: string) => Buffer.from(text);

interface WriteKind {
  name: string;
  /** Writes to `x/<id>` (or into the `x/` range only, when `rangeOnly`). */
  write(tx: Transaction, id: string): void;
  /** The write's key is unknown before it commits: only a range read can cover it. */
  rangeOnly?: boolean;
}

const writeKinds: WriteKind[] = [
  { name: 'set', write: (tx, id) => tx.set(b(`x/${id}`), b('changed')) },
  { name: 'clear', write: (tx, id) => tx.clear(b(`x/${id}`)) },
  { name: 'clearRange', write: (tx, id) => tx.clearRange(b(`x/${id}`), b(`x/${id}\xff`)) },
  { name: 'atomicAdd', write: (tx, id) => tx.atomicAdd(b(`x/${id}`), 1) },
  { name: 'setVersionstampedValue', write: (tx, id) => tx.setVersionstampedValue(b(`x/${id}`), Buffer.alloc(10), 0) },
  {
    name: 'addWriteConflictKey',
    write: (tx, id) => {
      tx.addWriteConflictKey(b(`x/${id}`));
      tx.set(b(`elsewhere/${id}`), b('1'));
    },
  },
  {
    name: 'setVersionstampedKey',
    write: (tx, id) => tx.setVersionstampedKey(Buffer.concat([b(`x/${id}/`), Buffer.alloc(10)]), `x/${id}/`.length, b('stamped')),
    rangeOnly: true,
  },
];

type ReadKind = 'point' | 'range' | 'snapshot point' | 'snapshot range';
const readKinds: ReadKind[] = ['point', 'range', 'snapshot point', 'snapshot range'];

async function read(tx: Transaction, kind: ReadKind, id: string): Promise<void> {
  const key = b(`x/${id}`);
  const end = b(`x/${id}0`);
  switch (kind) {
    case 'point':
      await tx.get(key);
      return;
    case 'range':
      await tx.getRange(key, end);
      return;
    case 'snapshot point':
      await tx.snapshot().get(key);
      return;
    case 'snapshot range':
      await tx.snapshot().getRange(key, end);
      return;
  }
}

/**
 * Starts a transaction that reads per `kind`, then waits until released to
 * write `out/<id>` and commit (no retry). Resolves `read` once it has read.
 */
function heldReader(db: EmbeddedDatabase, kind: ReadKind, id: string) {
  const { promise: released, resolve: release } = deferred();
  const { promise: readDone, resolve: hasRead } = deferred();
  const outcome = db
    .doTransaction(
      async (tx) => {
        await read(tx, kind, id);
        hasRead();
        await released;
        tx.set(b(`out/${id}`), b('1'));
      },
      { retryLimit: 0 },
    )
    .then(
      () => 'committed' as const,
      (error: unknown) => error,
    );
  return { readDone, release, outcome };
}

interface Scenario {
  /** Batches committed after the reader's read version (the conflicting one first). */
  behind: number;
  /** Engine milliseconds to let pass (with two more batches) before the reader commits: past the compaction delay. */
  idleMs: number;
}

const scenarios: Scenario[] = [
  { behind: 1, idleMs: 0 },
  { behind: 3, idleMs: 0 },
  { behind: 3, idleMs: 500 },
  // More write sets than the resolver checks directly: through the key index.
  { behind: 40, idleMs: 0 },
  { behind: 40, idleMs: 500 },
];

/** Counts the batches the conflict log compacts (the tests run one at a time, so the count is the current test's). */
const compacted = { count: 0 };
const compact = ConflictLog.prototype.compact;
ConflictLog.prototype.compact = function (this: ConflictLog, batch) {
  if (batch.pointMaps.length > 0) compacted.count += 1;
  compact.call(this, batch);
};

for (const { behind, idleMs } of scenarios) {
  test.serial(`a reader ${behind} batch(es) behind${idleMs > 0 ? ', after the writing batch was compacted,' : ''} conflicts with every kind of write to what it read, unless it read at snapshot`, async (t) => {
    t.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), 'jobtree-conflicts-behind-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    // The engine's clock moves only when the test moves it: no transaction grows too old on a loaded machine.
    let clock = 0;
    const db = EmbeddedDatabase.open({ path: dir, now: () => clock });
    t.teardown(() => db.close());
    let filler = 0;
    for (const writeKind of writeKinds) {
      for (const readKind of readKinds) {
        if (writeKind.rangeOnly && readKind.endsWith('point')) continue;
        const id = `${writeKind.name}-${readKind.replace(' ', '-')}`;
        await db.doTransaction((tx) => tx.set(b(`x/${id}`), b('stored')));
        const reader = heldReader(db, readKind, id);
        await reader.readDone;
        compacted.count = 0;
        await db.doTransaction((tx) => writeKind.write(tx, id));
        for (let i = 1; i < behind; i++) await db.doTransaction((tx) => tx.set(b(`filler/${filler++}`), b('1')));
        if (idleMs > 0) {
          clock += idleMs;
          for (let i = 0; i < 2; i++) await db.doTransaction((tx) => tx.set(b(`filler/${filler++}`), b('1')));
        }
        if (idleMs > 0) t.true(compacted.count > 0, 'the writing batch was compacted before the reader committed');
        reader.release();
        const outcome = await reader.outcome;
        const label = `${writeKind.name} against a ${readKind} read`;
        if (readKind.startsWith('snapshot')) {
          t.is(outcome, 'committed', label);
        } else {
          t.true(outcome instanceof FdbError && outcome.code === FdbErrorCode.not_committed, `${label}: ${String(outcome)}`);
        }
      }
    }
  });
}
