// `ctx.childResults()` as the scheduler answers it, for handlers on the
// main thread and in threads alike: the children of the job the run holds,
// read from the store (see `Jobs.getChildren`), or `halt` once the run is
// no longer the processor's.

import type { FlowChild, Jobs } from '@jobtree/core';
import type { HeldJobs } from './held-jobs.js';
import type { SerializedError } from './lane-protocol.js';

export type ChildResultsReply = (children: FlowChild[] | undefined, error?: SerializedError & { code: string }) => void;

export function answerChildResults(jobs: Jobs, held: HeldJobs, serial: number, reply: ChildResultsReply): void {
  const run = held.bySerial(serial);
  if (run === undefined || run.abort === 'cancel') {
    reply(undefined, { name: 'SchedulerError', code: 'halt', message: "the job is no longer this processor's" });
    return;
  }
  jobs.getChildren(run.job.type, run.job.id).then(
    (children) => reply(children),
    (error: unknown) => {
      const failure = error instanceof Error ? error : new Error(String(error));
      const code = (error as { code?: unknown }).code;
      reply(undefined, { name: failure.name, code: code === undefined ? 'error' : String(code), message: failure.message });
    },
  );
}
