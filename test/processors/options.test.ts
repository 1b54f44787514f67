// Processor options and start-up checks fail early with typed errors.
import test from 'ava';
import { ScheduleTable, SchedulerError, resolveSchedulerOptions, startScheduler } from '../../packages/jobtree/src/processors/index.js';
import { resolveProcessorOptions, schedulerSettings } from '../../packages/jobtree/src/processors/processor-options.js';
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
    [{ blockedLoopMs: 0 }, /blockedLoopMs/],
    [{ runIn: 'worker' }, /runIn/],
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

test('an unknown processor option is refused with invalid_option naming it and the option meant', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('t', 3);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ concurrency: 10 }, /"concurrency".*maxJobs/],
    [{ maxjobs: 10 }, /"maxjobs".*maxJobs/],
    [{ gracems: 10 }, /"gracems".*graceMs/],
    [{ retries: 2 }, /"retries".*attempts/],
    [{ attempts: { oneshot: 2 } }, /"oneshot".*oneShot/],
  ];
  for (const [options, message] of cases) {
    const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 't', handler: fixture('noop'), ...options }), {
      instanceOf: SchedulerError,
      message,
    });
    t.is(error?.code, 'invalid_option', JSON.stringify(options));
  }
  const stopped = await h.start('t', 'noop');
  await t.throwsAsync(stopped.stop({ grace: 0 } as never), { instanceOf: SchedulerError, message: /"grace".*graceMs/ });
});

test('a handler module that does not exist is refused at start with invalid_handler, before any job spends its attempts', async (t) => {
  const h = await harness(t);
  await h.jobs.setTypeTimeout('t', 3);
  for (const handler of ['/no/such/module.mjs', new URL('file:///no/such/module.mjs'), fixture('no-such-fixture')]) {
    const error = await t.throwsAsync(startScheduler({ jobs: h.jobs, type: 't', handler }), { instanceOf: SchedulerError });
    t.is(error?.code, 'invalid_handler', String(handler));
    t.regex(error?.message ?? '', /no such|does not exist|not found/i);
  }
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

test('processor options resolve once into one settings object that the schedule table reads as it is', (t) => {
  const resolved = resolveProcessorOptions({ maxJobs: 7, interval: 500 });
  t.true(Object.isFrozen(resolved));
  t.is(resolveSchedulerOptions(resolved), resolved, 'resolving resolved options again is a no-op');
  t.like(resolved, { maxJobs: 7, interval: 500, maxChurn: 20, acceptWaitMs: 500, heartbeatMs: undefined, graceMs: 5_000 });
  const settings = schedulerSettings(resolved, 3_000);
  t.like(settings, { maxJobs: 7, heartbeatMs: 1_000, holdMs: 1_500 });
  t.is(new ScheduleTable(settings).options, settings, 'the table reads the scheduler\'s own settings');
  t.is(schedulerSettings(resolveProcessorOptions({ heartbeatMs: 250 }), 3_000).heartbeatMs, 250);
});
