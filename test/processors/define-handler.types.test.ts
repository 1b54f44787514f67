// The job data type of a handler flows from defineHandler to job.data and
// ctx.update, and a scheduler takes the typed definition (checked against
// the job type's declared data when there is one).
import type { Jobs } from '@jobtree/core';
import test from 'ava';
import {
  type HandlerDefinition,
  type HandlerJob,
  type StartSchedulerOptions,
  defineHandler,
  startScheduler,
} from '../../packages/jobtree/src/processors/index.js';

interface Thumb {
  url: string;
  size: number;
}

const resize = defineHandler<Thumb, { thumb: string }>('file:///resize.ts', async (job, ctx) => {
  const size: number = job.data.size;
  // @ts-expect-error: not a field of the job data
  job.data.colour;
  // @ts-expect-error: progress has the job data's type
  await ctx.update({ size: 'big' });
  return { thumb: `${job.data.url}@${size}` };
});

test('a definition keeps its URL and its typed function', (t) => {
  const definition: HandlerDefinition<Thumb, { thumb: string }> = resize;
  t.is(definition.url, 'file:///resize.ts');
  t.is(typeof definition.run, 'function');
  const options: Pick<StartSchedulerOptions<Thumb, { thumb: string }>, 'handler'> = { handler: resize };
  t.is(options.handler, resize);
});

declare module '@jobtree/core' {
  interface JobTypes {
    'typed-thumbnail': Thumb;
  }
}

test('a handler for a declared job type must take that type\'s data', async (t) => {
  const jobs = {} as Jobs;
  const wrong = defineHandler<{ other: boolean }>('file:///wrong.ts', () => null);
  const check = () => {
    void startScheduler({ jobs, type: 'typed-thumbnail', handler: resize });
    // @ts-expect-error: the declared type's data is Thumb, not { other: boolean }
    void startScheduler({ jobs, type: 'typed-thumbnail', handler: wrong });
    // An undeclared type takes any handler.
    void startScheduler({ jobs, type: 'anything', handler: wrong });
    // A handler function (run on the main thread) is typed the same way, its job's data by the declared type.
    void startScheduler({ jobs, type: 'typed-thumbnail', handler: async (job) => job.data.size });
    // @ts-expect-error: the declared type's data is Thumb, not { other: boolean }
    void startScheduler({ jobs, type: 'typed-thumbnail', handler: async (job: HandlerJob<{ other: boolean }>) => job.data.other });
  };
  t.is(typeof check, 'function');
});
