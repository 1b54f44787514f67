// How a jobs app ends. `app.close()` ends it cleanly; the root supervisor
// jobs_sup ending on its own (killed, or out of restart intensity) ends it
// too, as an OTP application stops when its top supervisor dies: the tree
// is gone, so nothing the app offers could work any more.

import { type ExitReason, describeReason } from '@jobtree/actors';
import { JobsError } from '@jobtree/core';
import type { IntensityReachedEvent } from '@jobtree/supervisor';

/** Why a jobs app stopped, as `app.stopped` resolves with it. */
export interface AppStop {
  /**
   * `closed`: `app.close()` stopped it. `root_exited`: its root supervisor
   * jobs_sup ended on its own (it was killed, or it exceeded its restart
   * intensity); calls then reject with JobsError `app_stopped`.
   */
  cause: 'closed' | 'root_exited';
  /** jobs_sup's exit reason: `killed`, `shutdown` (out of restart intensity, or a clean close), an error… */
  reason: ExitReason;
  /** One line that says it, e.g. "the root supervisor jobs_sup was killed". */
  message: string;
}

/** The stop of a clean `app.close()`. */
export const CLOSED: AppStop = { cause: 'closed', reason: 'shutdown', message: 'the jobs app was closed' };

/** The stop of a root that ended on its own; `intensity` is set when it gave up restarting. */
export function rootExited(root: string, reason: ExitReason, intensity: IntensityReachedEvent | undefined): AppStop {
  const how =
    intensity !== undefined
      ? `exceeded its restart intensity (more than ${intensity.intensity} restarts in ${intensity.period} ms) and exited ${describeReason(reason)}`
      : reason === 'killed'
        ? 'was killed'
        : `exited ${describeReason(reason)}`;
  return { cause: 'root_exited', reason, message: `the root supervisor ${root} ${how}` };
}

/** The error every call of a stopped app rejects with. */
export function appStopped(stop: AppStop): JobsError {
  return new JobsError('app_stopped', `the jobs app stopped: ${stop.message}`);
}
