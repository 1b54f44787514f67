// Processor options and start-up checks fail early with typed errors.
import test from 'ava';
import { SchedulerError, startScheduler } from '../../packages/supervisor/src/processors/index.js';
import { fixture, harness } from './scheduler-harness.js';

test('bad processor options are refused with invalid_option naming the option', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('t', 3);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ attempts: 0 }, /attempts/],
    [{ attempts: { oneShot: 1.5 } }, /attempts\.oneShot/],
    [{ threads: 0 }, /threads/],
    [{ graceMs: -1 }, /graceMs/],
    [{ stuckThreadMs: 0 }, /stuckThreadMs/],
    [{ heartbeatMs: Number.NaN }, /heartbeatMs/],
    [{ maxJobs: -1 }, /maxJobs/],
    [{ interval: 0 }, /interval/],
    [{ clock: {} }, /clock/],
  ];
  for (const [options, message] of cases) {
    const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 't', handler: fixture('noop'), ...options }), {
      instanceOf: SchedulerError,
      message,
    });
    t.is(error?.code, 'invalid_option', JSON.stringify(options));
  }
});

test('a type without an activity timeout cannot be processed', async (t) => {
  const h = await harness(t);
  const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 'untimed', handler: fixture('noop') }), {
    instanceOf: SchedulerError,
  });
  t.is(error?.code, 'invalid_option');
  t.regex(error?.message ?? '', /setTypeTimeout/);
});

test('a relative handler path is refused with invalid_handler', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('t', 3);
  const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 't', handler: './noop.ts' }), { instanceOf: SchedulerError });
  t.is(error?.code, 'invalid_handler');
});

test('a module without a handler export makes every job crash with invalid_handler', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('t', 'not-a-handler', { attempts: 1 });
  const failed = new Promise<{ error: string }>((resolve) => scheduler.events.once('job:failed', resolve));
  await h.jobs.add('t', 'j');
  t.regex((await failed).error, /no default export/);
});

test('a stopped scheduler refuses a manual reschedule with stopped', async (t) => {
  const h = await harness(t);
  const scheduler = await h.start('t', 'noop');
  await scheduler.stop();
  const error = await t.throwsAsync(scheduler.reschedule(), { instanceOf: SchedulerError });
  t.is(error?.code, 'stopped');
});
