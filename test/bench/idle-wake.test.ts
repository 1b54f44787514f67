import test from 'ava';
import { type IdleWake, idleWakeRows, measureIdleWake, medianWake } from '../../bench/idle-wake.js';

const wake = (base: number): IdleWake => ({
  busySlice: { p50: base, p99: base + 1 },
  slice: { p50: base + 2, p99: base + 3 },
  ping: { p50: base + 4, p99: base + 5 },
});

test('each probe gives a positive p50 and a p99 no lower', async (t) => {
  const measured = await measureIdleWake(12, 1);
  for (const { p50, p99 } of [measured.busySlice, measured.slice, measured.ping]) {
    t.true(Number.isFinite(p50) && p50 > 0, `p50 ${p50}`);
    t.true(Number.isFinite(p99) && p99 >= p50, `p99 ${p99} against p50 ${p50}`);
  }
});

test('several measurements are summed up by the median of each figure', (t) => {
  const summed = medianWake([wake(10), wake(0), wake(20)]);
  t.deepEqual(summed, wake(10));
});

test('the rows name the idle gap and carry p50 and p99 of each probe', (t) => {
  const rows = idleWakeRows(wake(0), 7);
  t.deepEqual(
    rows.map(([, p50, p99]) => [p50, p99]),
    [
      [0, 1],
      [2, 3],
      [4, 5],
    ],
  );
  t.true(rows[1]?.[0].includes('7 ms idle'));
  t.true(rows[2]?.[0].includes('7 ms idle'));
});
