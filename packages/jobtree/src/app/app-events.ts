// `app.events`: how the jobs of this app end when they do not succeed, told
// as they happen in this process. Both come from the app's jobs handle
// (admin/job-activity.ts), which every change made in this process goes
// through: the app's own calls, its actors' bridge and its processors. A
// job given up or cancelled by another process sharing the store is that
// process's event. Beside them, `loop:blocked`: in-process handlers that held
// up this process's event loop, and `threads:restarting`: the app's handler
// threads starting late after threads exited before they ran a job.

import type { JobError } from '@jobtree/core';
import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type { JobActivity } from '../admin/job-activity.js';

/** The events of `app.events`, by name. */
export interface JobsAppEventTypes {
  /**
   * A job was given up: it finished `failed` (its processor out of
   * attempts, or a worker's `fail`), with the error it keeps
   * (`JobInfo.error`) and its failed attempts. A failed run that will run
   * again is the scheduler's `job:crashed`, not this.
   */
  'job:failed': [event: { type: string; id: string; error: JobError; attempts: number }];
  /** A pending or running job was ended as cancelled (`app.cancel`, or an actor's `cancel` through the bridge). */
  'job:cancelled': [event: { type: string; id: string }];
  /**
   * In-process handlers of `type` (`runIn: 'main'`) held the main thread's
   * event loop up for `lagMs`, longer than their processor's
   * `blockedLoopMs`, while the jobs `ids` ran (a handler that held it is
   * one of them). Also logged as a warning and counted in
   * `jobtree_event_loop_blocked_seconds`.
   */
  'loop:blocked': [event: { type: string; lagMs: number; ids: string[] }];
  /**
   * One of the app's handler threads exited before it ran a job (as it
   * started, or loading its modules, or after with no job's code running):
   * the next thread starts `delayMs` later, a wait that doubles (100 ms up
   * to 5 s) with each such exit in a row, `failures` of them so far. Once
   * per exit, whatever the types sharing the threads (each type's scheduler
   * has its own `threads:restarting`). Also logged as a warning.
   */
  'threads:restarting': [event: { reason: string; failures: number; delayMs: number }];
}

/**
 * The app's emitter, fed by its jobs handle's activity. A listener that
 * throws is logged: the call that ended the job (a processor's `fail`, your
 * `cancel`) has committed already and must not reject for it.
 */
export function appEvents(activity: JobActivity, logger: Logger): EventEmitter<JobsAppEventTypes> {
  const events = new EventEmitter<JobsAppEventTypes>();
  const emit = <K extends keyof JobsAppEventTypes>(name: K, event: JobsAppEventTypes[K][0]) => {
    try {
      (events.emit as (name: K, event: JobsAppEventTypes[K][0]) => boolean)(name, event);
    } catch (error) {
      logger.error({ err: error, event: name, type: 'type' in event ? event.type : undefined, id: 'id' in event ? event.id : undefined }, 'an app.events listener threw');
    }
  };
  activity.events.on('gaveUp', (type, id, error, attempts) => emit('job:failed', { type, id, error, attempts }));
  activity.events.on('cancelled', (type, id) => emit('job:cancelled', { type, id }));
  activity.events.on('loopBlocked', (type, lagMs, ids) => emit('loop:blocked', { type, lagMs, ids }));
  activity.events.on('threadsRestarting', (reason, failures, delayMs) => emit('threads:restarting', { reason, failures, delayMs }));
  return events;
}
