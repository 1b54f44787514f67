// A tour of jobtree's storage layer on the embedded engine (no server):
// transactions, a read-modify-write, a conflict that the retry loop resolves,
// a versionstamp, a watch that fires, and close.
//
//   pnpm demo:storage                (the same as: pnpm exec tsx examples/storage-demo.ts)
//   pnpm exec tsx examples/storage-demo.ts --path ./.data/demo   keep the data afterwards

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type FdbError, type TransactionOptions, openDatabase } from '@jobtree/core';

const { values } = parseArgs({ options: { path: { type: 'string' } } });
const temporary = values.path === undefined;
const path = values.path ?? mkdtempSync(join(tmpdir(), 'jobtree-storage-demo-'));

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? '(none)' : Buffer.from(bytes).toString());
const key = (name: string) => Buffer.from(name);
const step = (title: string) => console.log(`\n== ${title}`);

const db = await openDatabase({ path });

/**
 * Reads `visits`, lets another transaction add 100 to it and commit, then
 * writes its own increment: the read is stale, so the commit conflicts.
 */
async function incrementWhileAnotherWriterCommits(options: TransactionOptions): Promise<{ attempts: number; visits: number }> {
  let attempts = 0;
  let markRead: () => void = () => {};
  const firstAttemptRead = new Promise<void>((resolve) => {
    markRead = resolve;
  });
  let releaseFirstAttempt: () => void = () => {};
  const otherWriterDone = new Promise<void>((resolve) => {
    releaseFirstAttempt = resolve;
  });
  const increment = db.doTransaction(async (tx) => {
    attempts++;
    const visits = Number(text(await tx.get(key('visits'))));
    console.log(`  attempt ${attempts} reads visits = ${visits}`);
    if (attempts === 1) {
      markRead();
      await otherWriterDone;
    }
    tx.set(key('visits'), key(String(visits + 1)));
    return visits + 1;
  }, options);
  await firstAttemptRead;
  const theirs = await db.doTransaction(async (tx) => {
    const visits = Number(text(await tx.get(key('visits')))) + 100;
    tx.set(key('visits'), key(String(visits)));
    return visits;
  });
  console.log(`  another transaction sets visits = ${theirs} and commits`);
  releaseFirstAttempt();
  const visits = await increment;
  return { attempts, visits };
}
console.log(`opened the embedded database in ${path} (backend: ${db.kind})`);

try {
  step('1. a transaction: writes are buffered, visible to its own reads, committed atomically');
  const greeting = await db.doTransaction(async (tx) => {
    tx.set(key('greeting'), key('hello'));
    tx.set(key('visits'), key('0'));
    return text(await tx.get(key('greeting')));
  });
  console.log(`read back inside the transaction: ${greeting}`);

  step('2. a read-modify-write: read a counter, write it back plus one');
  for (let i = 0; i < 3; i++) {
    const visits = await db.doTransaction(async (tx) => {
      const next = Number(text(await tx.get(key('visits')))) + 1;
      tx.set(key('visits'), key(String(next)));
      return next;
    });
    console.log(`visits = ${visits}`);
  }

  step('3. a conflict: another writer commits between our read and our commit');
  // First without retries, to see the error the retry loop handles...
  try {
    await incrementWhileAnotherWriterCommits({ retryLimit: 0 });
  } catch (error) {
    const { code, label } = error as FdbError;
    console.log(`  with retryLimit 0 the commit fails: ${label} (${code})`);
  }
  // ...then with the default retry loop, which runs the body again on a fresh read.
  const { attempts, visits } = await incrementWhileAnotherWriterCommits({});
  console.log(`  with retries: ${attempts} attempts, visits = ${visits} (the other writer's update is kept)`);

  step('4. a versionstamp: the commit fills in 10 bytes, increasing with every commit');
  const logPrefix = key('log/');
  const stamps: string[] = [];
  for (const event of ['started', 'finished']) {
    let stamp: Promise<Buffer> | undefined;
    await db.doTransaction((tx) => {
      // A key template with 10 placeholder bytes after `log/`.
      tx.setVersionstampedKey(Buffer.concat([logPrefix, Buffer.alloc(10)]), logPrefix.length, key(event));
      stamp = tx.getVersionstamp();
    });
    const hex = (await stamp!).toString('hex');
    stamps.push(hex);
    console.log(`  ${event}: versionstamp ${hex}`);
  }
  const log = await db.doTransaction((tx) => tx.getRange(logPrefix, key('log0')));
  for (const { key: logKey, value } of log) {
    console.log(`  log key log/${logKey.subarray(logPrefix.length).toString('hex')} -> ${text(value)}`);
  }
  console.log(`  stamps increase: ${stamps[0]! < stamps[1]!}`);

  step('5. a watch: resolves once the watched key changes after the watching transaction committed');
  const watch = await db.doTransaction(async (tx) => {
    console.log(`  watching greeting (now: ${text(await tx.get(key('greeting')))})`);
    return tx.watch(key('greeting'));
  });
  setTimeout(() => {
    void db.doTransaction((tx) => tx.set(key('greeting'), key('bonjour'))).then(() => console.log('  another transaction changed greeting'));
  }, 50);
  const fired = await watch.promise;
  const now = await db.doTransaction((tx) => tx.get(key('greeting')));
  console.log(`  watch fired: ${fired}; greeting is now ${text(now)}`);
} finally {
  step('6. close');
  await db.close();
  if (temporary) rmSync(path, { recursive: true, force: true });
  console.log(temporary ? 'closed and removed the temporary data directory' : `closed; the data stays in ${path}`);
}
