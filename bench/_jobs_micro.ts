import { encodeJobData, decodeJobData } from '../packages/core/src/jobs/job-data.js';
import { JobKeys, parsePendingKey } from '../packages/core/src/jobs/job-keys.js';
import { decodeJobRecord, encodeJobRecord, newLock } from '../packages/core/src/jobs/job-record.js';
import { checkId, checkType } from '../packages/core/src/jobs/job-input.js';
const keys = new JobKeys().forType('bench');
const pk = keys.pendingKey(0, 1763790000, 'w12-123456');
const rec = encodeJobRecord({ state: 'running', seq: Buffer.alloc(12, 1), lock: newLock(), resubmit: false, priority: 0, scheduledTime: 1763790000, data: Buffer.from('{"n":123456}') });
const cases: Record<string, () => unknown> = {
  encodeJobData: () => encodeJobData({ n: 123456 }),
  'JSON.stringify plain': () => Buffer.from(JSON.stringify({ n: 123456 })),
  decodeJobData: () => decodeJobData(Buffer.from('{"n":123456}')),
  parsePendingKey: () => parsePendingKey(keys, pk),
  pendingKey: () => keys.pendingKey(0, 1763790000, 'w12-123456'),
  job: () => keys.job('w12-123456'),
  decodeJobRecord: () => decodeJobRecord(rec),
  encodeJobRecord: () => encodeJobRecord({ state: 'finished', seq: undefined, lock: undefined, resubmit: false, priority: 0, scheduledTime: 1763790000, data: Buffer.from('{"n":1}') }),
  newLock: () => newLock(),
  checkId: () => checkId('w12-123456'),
  checkType: () => checkType('bench'),
};
for (const [name, fn] of Object.entries(cases)) {
  for (let i = 0; i < 20000; i++) fn();
  const n = 200000; const t = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(`${name.padEnd(22)} ${((performance.now() - t) * 1000 / n).toFixed(3)} µs`);
}
