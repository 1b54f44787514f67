// A processor's retry policy as configuration: backoff schedules (fixed,
// exponential, capped, jittered) and functions, checked when the processor
// is set up, with a typed error for a bad value.
import test from 'ava';
import { SchedulerError, backoffMs, scheduleFunction, scheduledDelayMs } from '../../packages/jobtree/src/processors/index.js';
import { resolveProcessorOptions } from '../../packages/jobtree/src/processors/processor-options.js';

const boom = { name: 'Error', message: 'boom' };

test('without a backoff option the wait is the historical 30 s doubling per failure, capped at 2^10 times that', (t) => {
  const { backoff } = resolveProcessorOptions({});
  for (const attempt of [1, 2, 3, 10, 11, 12, 40]) t.is(backoff(attempt, boom), backoffMs(attempt), `attempt ${attempt}`);
});

test('a fixed schedule waits delayMs after every failure', (t) => {
  const { backoff } = resolveProcessorOptions({ backoff: { type: 'fixed', delayMs: 1500 } });
  t.deepEqual([1, 2, 7].map((attempt) => backoff(attempt, boom)), [1500, 1500, 1500]);
});

test('an exponential schedule doubles from delayMs and stops at maxDelayMs', (t) => {
  const { backoff } = resolveProcessorOptions({ backoff: { type: 'exponential', delayMs: 100, maxDelayMs: 1000 } });
  t.deepEqual([1, 2, 3, 4, 5, 6, 2000].map((attempt) => backoff(attempt, boom)), [100, 200, 400, 800, 1000, 1000, 1000]);
  // Without maxDelayMs the cap is 2^10 times the first wait, as the default schedule's.
  t.is(scheduledDelayMs({ type: 'exponential', delayMs: 100 }, 50), 100 * 2 ** 10);
});

test('jitter takes at most its fraction off each wait, and never goes above it', (t) => {
  const schedule = { type: 'exponential', delayMs: 1000, maxDelayMs: 4000, jitter: 0.25 } as const;
  t.is(scheduleFunction(schedule, () => 0)(1, boom), 1000);
  t.is(scheduleFunction(schedule, () => 1)(1, boom), 750);
  t.is(scheduleFunction(schedule, () => 0.5)(5, boom), 3500);
  const { backoff } = resolveProcessorOptions({ backoff: schedule });
  const waits = Array.from({ length: 500 }, () => backoff(3, boom));
  for (const wait of waits) t.true(wait >= 3000 && wait <= 4000, String(wait));
  t.true(new Set(waits).size > 1, 'the waits spread');
});

test('a backoff function is used as it is', (t) => {
  const backoff = (attempt: number): number => attempt * 7;
  t.is(resolveProcessorOptions({ backoff }).backoff, backoff);
});

test('bad retry options are refused with invalid_option naming them', (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ backoff: 30 }, /backoff is a function or/],
    [{ backoff: { type: 'linear', delayMs: 1 } }, /backoff\.type/],
    [{ backoff: { type: 'fixed' } }, /backoff\.delayMs/],
    [{ backoff: { type: 'fixed', delayMs: -1 } }, /backoff\.delayMs/],
    [{ backoff: { type: 'exponential', delayMs: 100, maxDelayMs: 10 } }, /maxDelayMs/],
    [{ backoff: { type: 'exponential', delayMs: 100, jitter: 1.5 } }, /backoff\.jitter/],
    [{ backoff: { type: 'exponential', delay: 100 } }, /"delay".*delayMs/],
    [{ retryIf: true }, /retryIf/],
    [{ maxRunMs: 0 }, /maxRunMs/],
    [{ maxRunMs: Number.POSITIVE_INFINITY }, /maxRunMs/],
  ];
  for (const [options, message] of cases) {
    const error = t.throws(() => resolveProcessorOptions(options), { instanceOf: SchedulerError, message }, JSON.stringify(options));
    t.is(error?.code, 'invalid_option');
  }
});
