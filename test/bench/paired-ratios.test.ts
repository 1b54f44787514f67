import test from 'ava';
import { pairedRatios, studentT975, verdictAtLeast } from '../../bench/peers/paired-ratios.js';

test('the geometric mean of paired ratios, not their arithmetic mean', (t) => {
  const stat = pairedRatios([0.5, 2]);
  t.is(stat.pairs, 2);
  t.true(Math.abs(stat.mean - 1) < 1e-12);
});

test('the interval is the t interval of the logarithms', (t) => {
  // logs: -0.1, 0, 0.1 -> mean 0, sd 0.1, half-width t(2) * 0.1 / sqrt(3)
  const stat = pairedRatios([Math.exp(-0.1), 1, Math.exp(0.1)]);
  const half = (4.303 * 0.1) / Math.sqrt(3);
  t.true(Math.abs(Math.log(stat.low) + half) < 1e-9);
  t.true(Math.abs(Math.log(stat.high) - half) < 1e-9);
});

test('ratios that are not positive and finite are left out', (t) => {
  const stat = pairedRatios([1, Number.NaN, 0, -1, Number.POSITIVE_INFINITY, 1]);
  t.is(stat.pairs, 2);
  t.is(stat.mean, 1);
});

test('one pair gives a mean and no interval; none gives nothing', (t) => {
  const one = pairedRatios([1.1]);
  t.is(one.pairs, 1);
  t.true(Math.abs(one.mean - 1.1) < 1e-12);
  t.true(Number.isNaN(one.low) && Number.isNaN(one.high));
  t.true(Number.isNaN(pairedRatios([]).mean));
  t.is(verdictAtLeast(one, 0.95), 'unsettled');
});

test('met when the whole interval keeps the target, missed when none does, else unsettled', (t) => {
  t.is(verdictAtLeast({ pairs: 10, mean: 1, low: 0.96, high: 1.04 }, 0.95), 'met');
  t.is(verdictAtLeast({ pairs: 10, mean: 0.9, low: 0.88, high: 0.94 }, 0.95), 'MISSED');
  t.is(verdictAtLeast({ pairs: 10, mean: 1, low: 0.9, high: 1.1 }, 0.95), 'unsettled');
});

test('many noisy pairs around 1 settle what a few cannot', (t) => {
  // A spread of ±20% around 1.0: four pairs leave it open, eighty settle it.
  const spread = [0.8, 1 / 0.8, 0.9, 1 / 0.9];
  const few = pairedRatios(spread);
  const many = pairedRatios(Array.from({ length: 20 }, () => spread).flat());
  t.is(verdictAtLeast(few, 0.95), 'unsettled');
  t.is(verdictAtLeast(many, 0.95), 'met');
});

test("Student's t: listed values, the wider of two neighbours between them, the normal limit far out", (t) => {
  t.is(studentT975(1), 12.706);
  t.is(studentT975(30), 2.042);
  t.is(studentT975(45), 2.021);
  t.is(studentT975(100_000), 1.96);
  t.throws(() => studentT975(0), { instanceOf: RangeError });
});
