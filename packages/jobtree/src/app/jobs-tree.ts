// The jobs tree as data: the child specs of the root supervisor, couch_jobs_sup's
// re-creation, and of the supervisors under it
//
//   jobs_sup (rest_for_one, 3 restarts per 10 s)
//    ├─ core                 serves the database to every thread (the bridge)
//    ├─ user_sup             (one_for_one) your actors and supervisors
//    ├─ activity_monitor_sup (one_for_one, 10 per 3 s) activity_monitor:<type>, temporary
//    ├─ notifier_sup         (one_for_one, 10 per 3 s) notifier:<type> (+ linked type_monitor:<type>), temporary
//    ├─ jobs_server          starts/stops the per-type children, crashes when one dies
//    ├─ schedule_ticker      adds the jobs of the stored schedules' due ticks
//    └─ pruner               removes finished jobs beyond their retention (when the app has one)
//
// with the events of each supervisor and how its children are named, for the
// live tree and the logs to follow. The app starts jobs_sup from it.

import type { ChildSpec, SupervisorChildSpec, SupervisorEvents, SupervisorSpec } from '@jobtree/supervisor';
import { actorStart, createSupervisorEvents, supervisorChild } from '@jobtree/supervisor';
import type { ClockSpec } from '../clock.js';
import type { JobsAppSettings } from './app-options.js';
import coreServer, { type CoreServerArgs } from './core-server.js';
import jobsServer from './jobs-server.js';
import pruner from './pruner.js';
import type { RetentionSettings } from './retention-options.js';
import scheduleTicker from './schedule-ticker.js';

/** The registered names of the jobs tree's own actors. */
export const SYSTEM_NAMES = {
  root: 'jobs_sup',
  core: 'core',
  user: 'user_sup',
  activityMonitorSup: 'activity_monitor_sup',
  notifierSup: 'notifier_sup',
  server: 'jobs_server',
  pruner: 'pruner',
  scheduleTicker: 'schedule_ticker',
} as const;

/** A supervisor of the tree, as the live tree and the logs follow it. */
export interface TreeSupervisor {
  /** Its registered name, also its child id under jobs_sup. */
  name: string;
  events: SupervisorEvents;
  /** The registered name of its child `childId` (a per-type child's id is its type). */
  nameOf?: (childId: string) => string;
  /** The actor linked to a child that the live tree shows beside it. */
  companion?: (childName: string) => string | undefined;
  /** Its children are temporary: the live tree forgets one once it exits. */
  dropOnExit: boolean;
}

export interface JobsTree {
  /** jobs_sup's spec and events. */
  root: { spec: SupervisorSpec; events: SupervisorEvents };
  /** The supervisors under jobs_sup, in start order. */
  supervisors: TreeSupervisor[];
}

export interface JobsTreeOptions {
  settings: JobsAppSettings;
  /** The app's clock, which the jobs server and the activity monitors keep time by. */
  clock: ClockSpec;
  /** How the core makes and withdraws the bridge to the database. */
  core: CoreServerArgs;
  /** The children of user_sup at each of its starts: a restarted user_sup starts them again. */
  userChildren(): ChildSpec[];
}

/** The specs of the jobs tree; nothing starts until jobs_sup is started from `root`. */
export function jobsTree({ settings: s, clock, core, userChildren }: JobsTreeOptions): JobsTree {
  const user = supervisorChild(
    SYSTEM_NAMES.user,
    () => ({ strategy: 'one_for_one', intensity: s.userIntensity, period: s.userPeriodMs, children: userChildren() }),
    { name: SYSTEM_NAMES.user },
  );
  const monitors = perTypeSupervisor(SYSTEM_NAMES.activityMonitorSup);
  const notifiers = perTypeSupervisor(SYSTEM_NAMES.notifierSup);
  const server: ChildSpec = {
    id: SYSTEM_NAMES.server,
    start: actorStart(
      jobsServer,
      {
        supervisor: SYSTEM_NAMES.root,
        clock,
        periodMs: s.typeCheckPeriodMs,
        maxJitterMs: s.typeCheckMaxJitterMs,
        activityMonitorSup: SYSTEM_NAMES.activityMonitorSup,
        notifierSup: SYSTEM_NAMES.notifierSup,
        activityMonitor: { maxJitterMs: s.activityMonitorMaxJitterMs, missingTimeoutCheckMs: s.missingTimeoutCheckMs, clock },
        notifier: { holdoffMs: s.typeMonitorHoldoffMs, pollTimeoutMs: s.typeMonitorPollMs, retryDelayMs: s.retryDelayMs },
      },
      { name: SYSTEM_NAMES.server, placement: 'main' },
    ),
  };
  const ticker: ChildSpec = {
    id: SYSTEM_NAMES.scheduleTicker,
    start: actorStart(
      scheduleTicker,
      { supervisor: SYSTEM_NAMES.root, clock, pollMs: s.schedulePollMs },
      { name: SYSTEM_NAMES.scheduleTicker, placement: 'main' },
    ),
  };
  return {
    root: {
      spec: {
        strategy: 'rest_for_one',
        intensity: 3,
        period: 10_000,
        children: [
          { id: SYSTEM_NAMES.core, start: actorStart(coreServer, core, { name: SYSTEM_NAMES.core, placement: 'main' }) },
          user,
          monitors,
          notifiers,
          server,
          ticker,
          // Last: under rest_for_one its crash restarts it alone.
          ...(s.retention === false || s.retention === undefined ? [] : [prunerChild(s.retention, clock)]),
        ],
      },
      events: createSupervisorEvents(),
    },
    supervisors: [
      { name: SYSTEM_NAMES.user, events: user.events, dropOnExit: false },
      { name: SYSTEM_NAMES.activityMonitorSup, events: monitors.events, dropOnExit: true, nameOf: (type) => `activity_monitor:${type}` },
      {
        name: SYSTEM_NAMES.notifierSup,
        events: notifiers.events,
        dropOnExit: true,
        nameOf: (type) => `notifier:${type}`,
        companion: (name) => `type_monitor:${name.slice('notifier:'.length)}`,
      },
    ],
  };
}

/** The pruner, which keeps finished jobs within the app's retention. */
function prunerChild(retention: RetentionSettings, clock: ClockSpec): ChildSpec {
  return {
    id: SYSTEM_NAMES.pruner,
    start: actorStart(pruner, { supervisor: SYSTEM_NAMES.root, retention, clock }, { name: SYSTEM_NAMES.pruner, placement: 'main' }),
  };
}

/** A supervisor of per-type children, which the jobs server starts and stops. */
function perTypeSupervisor(name: string): SupervisorChildSpec {
  return supervisorChild(name, { strategy: 'one_for_one', intensity: 10, period: 3_000, children: [] }, { name });
}
