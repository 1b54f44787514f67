// What a set of paired ratios says about a target on them: their geometric
// mean and its 95% confidence interval (Student's t on the logarithms).
//
// `--retention` runs each drain with retention on and off one right after
// the other, so each pair's ratio cancels most of what the machine did
// meanwhile; what is left varies by ±20–40% per pair on a shared 2-core
// machine, far more than the 5% the target allows. One cell's few rounds
// cannot settle that; the pairs of every drain of a variant, or of every
// variant (the difference between on and off is the same in all of them:
// the pruner started and idle), can. A target is met when the whole
// interval keeps it, missed when none of it does, and unsettled otherwise.

/** Student's t, two-sided 95%, by degrees of freedom (1–30), then a few larger ones. */
const T_975: readonly number[] = [
  Number.NaN, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086,
  2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];
const T_975_LARGE: readonly (readonly [number, number])[] = [
  [40, 2.021],
  [60, 2.0],
  [120, 1.98],
];
const T_975_LIMIT = 1.96;

/** The two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1); between listed values, the next smaller df's (the wider interval). */
export function studentT975(df: number): number {
  if (!Number.isInteger(df) || df < 1) throw new RangeError(`degrees of freedom must be a positive integer, got ${df}`);
  if (df < T_975.length) return T_975[df] as number;
  let value = T_975[T_975.length - 1] as number;
  for (const [atLeast, t] of T_975_LARGE) if (df >= atLeast) value = t;
  return df > 1_000 ? T_975_LIMIT : value;
}

export interface PairedRatios {
  /** How many pairs. */
  readonly pairs: number;
  /** The geometric mean of the ratios. */
  readonly mean: number;
  /** Its 95% confidence interval (NaN bounds with fewer than 2 pairs). */
  readonly low: number;
  readonly high: number;
}

/** The geometric mean of positive, finite ratios and its 95% interval; ratios that are not are left out. */
export function pairedRatios(ratios: readonly number[]): PairedRatios {
  const logs = ratios.filter((r) => Number.isFinite(r) && r > 0).map(Math.log);
  const pairs = logs.length;
  if (pairs === 0) return { pairs, mean: Number.NaN, low: Number.NaN, high: Number.NaN };
  const meanLog = logs.reduce((sum, x) => sum + x, 0) / pairs;
  if (pairs < 2) return { pairs, mean: Math.exp(meanLog), low: Number.NaN, high: Number.NaN };
  const variance = logs.reduce((sum, x) => sum + (x - meanLog) ** 2, 0) / (pairs - 1);
  const half = studentT975(pairs - 1) * Math.sqrt(variance / pairs);
  return { pairs, mean: Math.exp(meanLog), low: Math.exp(meanLog - half), high: Math.exp(meanLog + half) };
}

export type Verdict = 'met' | 'MISSED' | 'unsettled';

/** Whether ratios keep `ratio >= target`: met when the whole interval does, missed when none of it does. */
export function verdictAtLeast(stat: PairedRatios, target: number): Verdict {
  if (stat.low >= target) return 'met';
  if (stat.high < target) return 'MISSED';
  return 'unsettled';
}
