// A cron expression's spelling, by which a schedule set again is found to
// keep its times: the ways croner reads alike meet, and expressions that
// may tick apart (DST included) do not.

import test from 'ava';
import { cronSpelling } from '../../packages/core/src/jobs/cron-spelling.js';

test("spellings croner reads alike meet: nicknames, spaces, letter case, a seconds field of 0, month and day names", (t) => {
  const alike = [
    ['@daily', '0 0 * * *', '@midnight', '  0  0 * * *  ', '0 0 0 * * *', '0\t0 * * *', '@DAILY'],
    ['@weekly', '0 0 * * sun', '0 0 * * SUN', '0 0 * * 0'],
    ['@yearly', '@annually', '0 0 1 1 *', '0 0 1 jan *'],
    ['0 9 * * mon-fri', '0 9 * * 1-5', '0 0 9 * * MON-FRI'],
    ['0 9 * * fri-sun', '0 9 * * 5-7'],
    ['0 9 * jan,jul *', '0 9 * 1,7 *'],
  ];
  for (const group of alike) {
    for (const cron of group) t.is(cronSpelling(cron), cronSpelling(group[0] as string), `${cron} as ${group[0]}`);
  }
});

test('expressions that may tick apart do not meet, a wildcard or step in the time fields against a list included', (t) => {
  const apart = [
    ['0 0 * * *', '0 1 * * *'],
    ['0 0 * * *', '30 0 0 * * *'],
    // Alike by the clock, apart across DST: a wildcard runs through both fall-back hours.
    ['0 * * * *', '0 0-23 * * *'],
    ['*/15 * * * *', '0,15,30,45 * * * *'],
    ['@weekly', '0 0 * * 1'],
  ];
  for (const [a, b] of apart) t.not(cronSpelling(a as string), cronSpelling(b as string), `${a} against ${b}`);
});
