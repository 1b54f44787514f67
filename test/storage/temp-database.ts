// An embedded database in a fresh temporary folder, closed and deleted when
// the test ends.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@jobtree/core';
import type { Database } from '@jobtree/core';

export async function openTempDatabase(t: { teardown(fn: () => void | Promise<void>): void }, name: string): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), `jobtree-${name}-`));
  const db = await openDatabase({ path: dir });
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}
