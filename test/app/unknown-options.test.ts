// Every options object of the app, its processors, its actors and its
// supervisors refuses a key it does not know, naming it (and, when one is
// close, the option meant), before anything starts: `app.process(type,
// handler, { concurrency: 10 })` must not start a processor that runs the
// default number of jobs.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { ActorError, createActorSystem } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import { SchedulerError, SupervisorError, actorStart, startJobs, startSupervisor, supervisorChild } from 'jobtree';
import worker from '../supervisor/fixtures/worker.js';
import greet from './fixtures/greet-handler.js';
import { T1, startTempApp } from './fixtures/temp-app.js';

type Options = Record<string, unknown>;

interface OptionsSite {
  name: string;
  known: readonly string[];
  /** Calls the API with `options` (merged into what the call needs); rejects as the API does. */
  call(options: Options): Promise<unknown>;
  /** Whether `error` is this site's error for a bad option. */
  refuses(error: unknown): boolean;
}

const refusedWith =
  (kind: abstract new (...args: never[]) => Error & { code: unknown }, code: string) =>
  (error: unknown): boolean =>
    error instanceof kind && error.code === code;

function unknownKey(known: readonly string[]): fc.Arbitrary<string> {
  const tried = fc.constantFrom('concurrency', 'delay', 'attempts', 'tx', 'workers', 'timeoutMs', 'restarts', '__proto__', 'toString');
  return fc.oneof(tried, fc.string({ minLength: 1, maxLength: 12 })).filter((key) => !known.includes(key));
}
const anyValue = fc.anything().filter((value) => value !== undefined);

const PROCESSOR_OPTIONS = [
  'maxJobs',
  'maxChurn',
  'interval',
  'maxHistory',
  'healthThreshold',
  'attempts',
  'runIn',
  'blockedLoopMs',
  'threads',
  'graceMs',
  'stuckThreadMs',
  'heartbeatMs',
  'acceptWaitMs',
  'clock',
];
const START_OPTIONS = [
  'path',
  'clusterFile',
  'directory',
  'database',
  'threads',
  'handlerThreads',
  'typeCheckPeriodMs',
  'typeCheckMaxJitterMs',
  'activityMonitorMaxJitterMs',
  'missingTimeoutCheckMs',
  'typeMonitorHoldoffMs',
  'typeMonitorPollMs',
  'schedulePollMs',
  'retryDelayMs',
  'resubscribeTimeoutMs',
  'userIntensity',
  'userPeriodMs',
  'killTimeoutMs',
  'clockSpeed',
  'admin',
  'logLevel',
  'logger',
  'onRootExit',
];

test.serial('every options object of the app, processors, actors and supervisors refuses an unknown key, naming it, before anything starts', async (t) => {
  t.timeout(180_000);
  const { app } = await startTempApp(t);
  const neverOpened = join(await mkdtemp(join(tmpdir(), 'jobtree-unknown-options-')), 'store');
  t.teardown(() => rm(join(neverOpened, '..'), { recursive: true, force: true }));
  const actors = app.system.actors;
  let next = 0;
  const spec = { strategy: 'one_for_one' as const, children: [] };
  const sites: OptionsSite[] = [
    {
      name: 'startJobs',
      known: START_OPTIONS,
      call: async (options) => (await startJobs({ path: neverOpened, ...options })).close(),
      refuses: refusedWith(JobsError, 'invalid_option'),
    },
    {
      name: 'startJobs admin',
      known: ['port', 'host', 'dataDir', 'refreshMs', 'token'],
      call: async (options) => (await startJobs({ path: neverOpened, admin: { port: 0, ...options } })).close(),
      refuses: refusedWith(JobsError, 'invalid_option'),
    },
    {
      name: 'app.process',
      known: PROCESSOR_OPTIONS,
      call: (options) => app.process(T1, greet, options),
      refuses: refusedWith(SchedulerError, 'invalid_option'),
    },
    {
      name: 'app.process attempts',
      known: ['oneShot', 'continuous'],
      call: (options) => app.process(T1, greet, { attempts: options }),
      refuses: refusedWith(SchedulerError, 'invalid_option'),
    },
    {
      name: 'createActorSystem',
      known: ['threads', 'core', 'coreWaitMs', 'killTimeoutMs', 'stuckThreadTimeoutMs', 'shutdownTimeoutMs'],
      call: async (options) => createActorSystem({ threads: 1, ...options }).shutdown(),
      refuses: refusedWith(ActorError, 'bad_argument'),
    },
    {
      name: 'spawn',
      known: ['name', 'placement', 'link', 'monitor'],
      call: async (options) => actors.exit(await actors.spawn(worker, undefined, options), 'kill'),
      refuses: refusedWith(ActorError, 'bad_argument'),
    },
    {
      name: 'inbox',
      known: ['name'],
      call: async (options) => app.system.inbox(options).close(),
      refuses: refusedWith(ActorError, 'bad_argument'),
    },
    {
      name: 'startActor',
      known: ['name', 'placement'],
      call: (options) => app.system.startActor(`actor-${next++}`, worker, undefined, options),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
    {
      name: 'a supervisor spec',
      known: ['strategy', 'intensity', 'period', 'autoShutdown', 'children'],
      call: async (options) => (await startSupervisor(actors, { ...spec, ...options })).stop(),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
    {
      name: 'a child spec',
      known: ['id', 'start', 'restart', 'shutdown', 'type', 'significant', 'events'],
      call: async (options) => (await startSupervisor(actors, { ...spec, children: [{ id: 'c', start: actorStart(worker, undefined), ...options }] })).stop(),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
    {
      name: "a child's spawn options",
      known: ['name', 'placement'],
      call: async (options) => (await startSupervisor(actors, { ...spec, children: [{ id: 'c', start: actorStart(worker, undefined, options) }] })).stop(),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
    {
      name: 'startSupervisor',
      known: ['name', 'link', 'events'],
      call: async (options) => (await startSupervisor(actors, spec, options)).stop(),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
    {
      name: 'supervisorChild',
      known: ['restart', 'shutdown', 'significant', 'name'],
      call: async (options) => supervisorChild('nested', spec, options),
      refuses: refusedWith(SupervisorError, 'invalid_spec'),
    },
  ];
  for (const site of sites) {
    await fc.assert(
      fc.asyncProperty(unknownKey(site.known), anyValue, async (key, value) => {
        const error = await site.call(Object.fromEntries([[key, value]])).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        if (!site.refuses(error)) throw new Error(`${site.name} { ${JSON.stringify(key)} } gave ${String(error)}`);
        if (!(error as Error).message.includes(JSON.stringify(key))) {
          throw new Error(`${site.name}'s refusal does not name ${JSON.stringify(key)}: ${(error as Error).message}`);
        }
      }),
      { numRuns: 25 },
    );
    t.pass(site.name);
  }
  t.is(app.system.whereis(`processor:${T1}`), undefined, 'no refused process() started a processor');
});

test.serial('an unknown key names the option meant, and the tx case says to use app.in(tx)', async (t) => {
  const { app } = await startTempApp(t);
  const refusal = async (call: Promise<unknown>, kind: abstract new (...args: never[]) => Error): Promise<string> => {
    const error = await t.throwsAsync(call, { instanceOf: kind });
    return error?.message ?? '';
  };
  await app.database.doTransaction(async (tx) => {
    t.regex(await refusal(app.add(T1, 'a', {}, { tx } as never), JobsError), /"tx".*app\.in\(tx\)\.add\(/);
  });
  t.regex(await refusal(app.add(T1, 'a', {}, { delay: 5000, attempts: 5 } as never), JobsError), /"delay".*scheduledTime/);
  t.regex(await refusal(app.add(T1, 'a', {}, { attempts: 5 } as never), JobsError), /"attempts".*process/);
  t.is(await app.getJob(T1, 'a'), undefined, 'no job was added');
  t.regex(await refusal(app.process(T1, greet, { concurrency: 10 } as never), SchedulerError), /"concurrency".*maxJobs/);
  t.regex(await refusal(startJobs({ threds: 2 } as never), JobsError), /"threds".*threads/);
  t.regex(await refusal(Promise.resolve().then(() => app.system.inbox({ nmae: 'x' } as never)), ActorError), /"nmae".*name/);
  t.regex(await refusal(startSupervisor(app.system.actors, { strategy: 'one_for_one', children: [], intensty: 1 } as never), SupervisorError), /"intensty".*intensity/);
});

test.serial('app.process refuses bad options, a missing module and an untimed type with their documented errors, before anything starts', async (t) => {
  const { app } = await startTempApp(t);
  const refused = async (call: Promise<unknown>, code: SchedulerError['code']): Promise<SchedulerError | undefined> => {
    const error = await t.throwsAsync(call, { instanceOf: SchedulerError });
    t.is(error?.code, code);
    t.is(app.system.whereis(`processor:${T1}`), undefined, 'nothing started');
    return error;
  };
  await refused(app.process(T1, greet, { maxJobs: -1 }), 'invalid_option');
  await refused(app.process(T1, greet, { attempts: 0 }), 'invalid_option');
  await refused(app.process(T1, greet, { clock: {} as never }), 'invalid_option');
  const missing = await refused(app.process(T1, '/no/such/module.mjs'), 'invalid_handler');
  t.regex(missing?.message ?? '', /\/no\/such\/module\.mjs/);
  await refused(app.process(T1, new URL('file:///no/such/module.mjs')), 'invalid_handler');
  await refused(app.process(T1, './relative.mjs'), 'invalid_handler');
  await refused(app.process('untimed', greet), 'invalid_option');
  t.is(app.system.whereis('processor:untimed'), undefined);
  // The same type then starts with good options: the refusals left nothing behind.
  await app.process(T1, greet, { maxJobs: 2, threads: 1 });
  t.truthy(app.system.whereis(`processor:${T1}`));
});
