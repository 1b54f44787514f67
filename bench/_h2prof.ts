import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@jobtree/core';
import { measureThroughput } from './throughput.ts';
const dir = mkdtempSync(join(tmpdir(), 'h2prof-'));
const db = await openDatabase({ path: dir });
const V = Buffer.alloc(100, 1);
const keys = Array.from({ length: 10000 }, (_, i) => Buffer.from(`r/${i.toString().padStart(10, '0')}`));
await db.doTransaction((tx) => { for (const k of keys) tx.set(k, V); });
const per = Number(process.argv[2] ?? 10);
const r = await measureThroughput({ concurrency: 64, seconds: 3 }, (_, n) =>
  db.doTransaction(async (tx) => { for (let i = 0; i < per; i++) await tx.get(keys[(n * per + i) % 10000]!); }));
console.log('reads/s', Math.round(r.perSecond * per));
await db.close();
rmSync(dir, { recursive: true, force: true });
