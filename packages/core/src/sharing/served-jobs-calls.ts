// The jobs API as the owner of a shared store serves it: one method of its
// own jobs handle per call, so the calls of every process share that
// handle's batched transactions and wake its waiting accepts. What cannot
// cross a socket as it is gets a form that can: an accept's AbortSignal is
// the call's (cancelled by the client, or by its process going away), a
// watch is a channel the owner pushes to, a batch's per-item errors travel
// as plain objects.

import { JobsError } from '../errors.js';
import type { Job, Settled } from '../jobs/interfaces.js';
import type { Jobs } from '../jobs/jobs.js';
import type { Watch } from '../storage/interfaces.js';
import type { ServedCall, ServedMethod } from './store-server.js';
import { acceptEmptiedQueue } from '../jobs/accept-calls.js';
import { whenHandedOver } from '../jobs/parked-accepts.js';
import { NotedAnswer, type WireError, fromWireError, toWireError } from './wire-protocol.js';

/** The methods served as they are: arguments in, the handle's answer out. */
const PLAIN_METHODS = [
  'setTypeTimeout',
  'getTypeTimeout',
  'clearTypeTimeout',
  'getTypes',
  'setTypeLimits',
  'getTypeLimits',
  'pause',
  'resume',
  'isPaused',
  'getPausedTypes',
  'setSchedule',
  'getSchedule',
  'getSchedules',
  'removeSchedule',
  'addScheduleTicks',
  'add',
  'addMany',
  'addFlow',
  'getChildren',
  'getFlow',
  'remove',
  'cancel',
  'retry',
  'pruneFinished',
  'resubmit',
  'getJobState',
  'getJobData',
  'getJob',
  'getJobStates',
  'getJobs',
  'pendingCount',
  'getActiveJobIds',
  'update',
  'finish',
  'complete',
  'fail',
  'failAttempt',
  'getActivityVersionstamp',
  'getActiveSince',
  'getInactiveSince',
  'reEnqueueInactive',
] as const satisfies readonly (keyof Jobs)[];

/** The channel a watch's firing is pushed on. */
export function watchChannel(watchId: number): string {
  return `watch:${watchId}`;
}

/** A batch's per-item outcome as it crosses. */
export type WireSettled<T> = { status: 'fulfilled'; value: T } | { status: 'rejected'; reason: WireError };

export function toWireSettled<T>(outcomes: Settled<T>[]): WireSettled<T>[] {
  return outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome : { status: 'rejected', reason: toWireError(outcome.reason) }));
}

export function fromWireSettled<T>(outcomes: WireSettled<T>[]): Settled<T>[] {
  return outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome : { status: 'rejected', reason: fromWireError(outcome.reason) }));
}

/** The jobs API's served methods, on the handle `jobs()` gives at the time of each call. */
export function servedJobsCalls(jobs: () => Jobs): Map<string, ServedMethod> {
  const methods = new Map<string, ServedMethod>();
  for (const name of PLAIN_METHODS) {
    methods.set(name, (args) => (jobs()[name] as (...rest: unknown[]) => Promise<unknown>)(...args));
  }
  // A waiting accept handed its jobs by a write is answered as the write
  // becomes readable (answerWhenHanded); the others when their accept
  // resolves, with no turn of the microtask queue added on the way: for an
  // idle worker of another process, every such turn is on the way from an
  // add in this process to the start of its handler.
  methods.set('accept', ([type, options], call) => {
    answerWhenHanded(call, (handed) => handed[0]);
    return jobs()
      .accept(type as string, { ...(options as object), signal: call.signal })
      .then((taken) => (taken === undefined || call.answered ? undefined : keptFor(jobs(), call, [taken], (kept) => kept[0])));
  });
  methods.set('acceptMany', ([type, max, options], call) => {
    answerWhenHanded(call, (handed, tookAllBrought) => (tookAllBrought ? new NotedAnswer(handed, 'emptied_queue') : handed));
    return jobs()
      .acceptMany(type as string, max as number, { ...(options as object), signal: call.signal })
      .then((taken) =>
        call.answered ? undefined : keptFor(jobs(), call, taken, (kept) => (kept === taken && acceptEmptiedQueue(taken) ? new NotedAnswer(kept, 'emptied_queue') : kept)),
      );
  });
  methods.set('updateMany', async ([items]) => toWireSettled(await jobs().updateMany(items as never)));
  methods.set('finishMany', async ([items]) => toWireSettled(await jobs().finishMany(items as never)));
  methods.set('completeMany', async ([items]) => toWireSettled(await jobs().completeMany(items as never)));
  methods.set('failMany', async ([items]) => toWireSettled(await jobs().failMany(items as never)));
  const watches = new Map<number, Watch>();
  let nextWatch = 1;
  /** Keeps `watch` for the caller's process and pushes its firing; the id the client knows it by. */
  const served = (watch: Watch, call: ServedCall): number => {
    const watchId = nextWatch++;
    watches.set(watchId, watch);
    call.connection.onClose(() => watch.cancel());
    void watch.promise.then((fired) => {
      watches.delete(watchId);
      call.connection.push(watchChannel(watchId), fired);
    });
    return watchId;
  };
  methods.set('watchActivity', async ([type], call) => {
    const { versionstamp, watch } = await jobs().watchActivity(type as string);
    return { versionstamp, watchId: served(watch, call) };
  });
  methods.set('watchCancellations', async ([type], call) => {
    const { cancellations, watch } = await jobs().watchCancellations(type as string);
    return { cancellations, watchId: served(watch, call) };
  });
  methods.set('cancelWatch', ([watchId]) => {
    watches.get(watchId as number)?.cancel();
    return undefined;
  });
  return methods;
}

/**
 * Answers `call`, a waiting accept, with `answer(jobs)` as soon as a write
 * hands it jobs (see whenHandedOver), encoded while that write commits
 * (`taking`) when the commit gives the time, unless its caller cancelled or went
 * away by then: its jobs then go back through `keptFor` when the accept
 * resolves. The accept resolves with the jobs the answer carried.
 */
function answerWhenHanded(call: ServedCall, answer: (handed: Job[], tookAllBrought: boolean) => unknown): void {
  /** The answer encoded while the write that takes its jobs commits, and whether the wire carries it. */
  let early: { jobs: Job[]; tookAllBrought: boolean; value: unknown; carried: boolean } | undefined;
  whenHandedOver(call.signal, {
    taking(jobs, tookAllBrought) {
      if (call.signal.aborted) return;
      const value = answer(jobs, tookAllBrought);
      early = { jobs, tookAllBrought, value, carried: call.prepare(value) };
    },
    handed(jobs, tookAllBrought) {
      if (call.signal.aborted) return;
      const prepared = early?.jobs === jobs && early.tookAllBrought === tookAllBrought ? early : undefined;
      early = undefined;
      const value = prepared === undefined ? answer(jobs, tookAllBrought) : prepared.value;
      // An answer the wire cannot carry is left to the accept's end (keptFor), which gives its jobs back.
      if (!(prepared === undefined ? call.prepare(value) : prepared.carried)) return;
      call.answer(value);
    },
  });
}

/**
 * Jobs taken for a process that went away (or cancelled) while its accept
 * committed go back to the queue, as a killed actor's do: nobody would
 * run them before the activity timeout otherwise. The answer, `answer(taken)`,
 * comes at once when the caller is still there, encoded here (the call then
 * sends these bytes): jobs whose answer the wire cannot carry go back too,
 * where a worker of this process can run them, and the call fails.
 */
function keptFor<R>(jobs: Jobs, call: ServedCall, taken: Job[], answer: (kept: Job[]) => R): R | Promise<R> {
  if (taken.length === 0) return answer(taken);
  if (!call.signal.aborted) {
    const value = answer(taken);
    if (call.prepare(value)) return value;
    return giveBack(jobs, taken).then(() => {
      throw new JobsError('invalid_job_data', `a job taken for this accept holds data the wire between processes cannot carry (nested too deep for msgpack): it went back to the queue`);
    });
  }
  return giveBack(jobs, taken).then(() => answer([]));
}

async function giveBack(jobs: Jobs, taken: Job[]): Promise<void> {
  for (const job of taken) {
    const flagged = await jobs.resubmit(job);
    await jobs.finish(flagged);
  }
}
