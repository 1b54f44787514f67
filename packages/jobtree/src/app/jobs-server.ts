// Re-creates couch_jobs_server: it checks the set of job types every period
// (plus real jitter) and at once when asked, starts an activity monitor and a
// notifier for each type that has a timeout (in the process that owns the
// store: the others of a shared store run none), stops those of types that lost
// theirs, and monitors them all. When one of them dies it crashes with
// `unexpected_process_exit`, so that the root's rest_for_one strategy
// restarts it, and its init stops whatever per-type children are left and
// starts them all again.

import { type ActorContext, type ActorId, type MonitorRef, defineActor, describeReason } from '@jobtree/actors';
import { clockFromSpec, type ClockSpec } from '../clock.js';
import { Supervisor, actorStart, createSupervisorEvents } from '@jobtree/supervisor';
import activityMonitor, { type ActivityMonitorArgs } from './activity-monitor.js';
import { badMessage, hasType, onExit, refuseCall, refuseCast } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import notifier, { type NotifierArgs } from './notifier.js';
import { isTransient } from './retry-guard.js';

export interface JobsServerArgs {
  /** The registered name of its supervisor, the one process whose exit signal it obeys. */
  supervisor: string;
  periodMs: number;
  maxJitterMs: number;
  /** The app's clock: the period and jitter are in its milliseconds. */
  clock?: ClockSpec;
  activityMonitorSup: string;
  notifierSup: string;
  activityMonitor: Omit<ActivityMonitorArgs, 'type' | 'supervisor'>;
  notifier: Omit<NotifierArgs, 'type' | 'supervisor'>;
}

export type JobsServerMessage =
  /** call: check the types now (after setTypeTimeout/clearTypeTimeout); replies the types being watched. */
  { type: 'check_types' };

interface TypeChildren {
  monitor: { id: ActorId; ref: MonitorRef };
  notifier: { id: ActorId; ref: MonitorRef };
}

interface JobsServerState {
  args: JobsServerArgs;
  parent: ActorId | undefined;
  core: JobsCore;
  types: Map<string, TypeChildren>;
  monitorSup: Supervisor;
  notifierSup: Supervisor;
  /** Monitors this server dropped on purpose: their DOWN, if already queued, is not a crash. */
  dropped: Set<MonitorRef>;
}

const CHECK = 'check_types';

export default defineActor<JobsServerMessage, JobsServerArgs, JobsServerState>(import.meta.url, {
  async init(args, ctx) {
    ctx.trapExit(true);
    const parent = ctx.whereis(args.supervisor);
    const monitorSup = supervisorOf(ctx, args.activityMonitorSup);
    const notifierSup = supervisorOf(ctx, args.notifierSup);
    // Per-type children left by a previous server would be started twice:
    // stop them, the first check starts them all again.
    await stopAll(monitorSup);
    await stopAll(notifierSup);
    const state: JobsServerState = { args, parent, core: jobsCore(ctx), types: new Map(), monitorSup, notifierSup, dropped: new Set() };
    ctx.sendAfter(0, CHECK);
    return state;
  },
  async handleCall(msg, state, ctx) {
    if (!hasType(msg, 'check_types')) return refuseCall(msg);
    await checkTypes(state, ctx);
    return { reply: [...state.types.keys()] };
  },
  handleCast: refuseCast,
  async handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') {
      onExit(msg, [state.parent], ctx);
      return state;
    }
    if (msg.type === 'TIMEOUT' && msg.tag === CHECK) {
      try {
        await checkTypes(state, ctx);
      } catch (error) {
        if (!isTransient(error)) throw error;
      }
      const wait = state.args.periodMs + Math.random() * state.args.maxJitterMs;
      ctx.sendAfter(Math.round(clockFromSpec(state.args.clock).realMs(wait)), CHECK);
      return state;
    }
    if (msg.type === 'DOWN') {
      if (state.dropped.delete(msg.ref)) return state;
      ctx.stop({
        error: {
          name: 'unexpected_process_exit',
          code: 'unexpected_process_exit',
          message: `unexpected_process_exit: ${msg.id} exited (${describeReason(msg.reason)})`,
        },
      });
      return state;
    }
    ctx.stop(badMessage('bad_info', msg));
    return state;
  },
});

function supervisorOf(ctx: ActorContext<JobsServerMessage>, name: string): Supervisor {
  const id = ctx.whereis(name);
  if (id === undefined) throw new Error(`${name} is not running`);
  return new Supervisor(ctx, id, createSupervisorEvents());
}

async function stopAll(sup: Supervisor): Promise<void> {
  for (const child of await sup.whichChildren()) {
    if (child.actor !== undefined) await sup.terminateChild(child.id).catch(() => {});
  }
}

async function checkTypes(state: JobsServerState, ctx: ActorContext<JobsServerMessage>): Promise<void> {
  const wanted = new Set(await state.core.typesToWatch());
  for (const type of wanted) if (!state.types.has(type)) await startType(state, ctx, type);
  for (const type of [...state.types.keys()]) if (!wanted.has(type)) await stopType(state, ctx, type);
}

async function startType(state: JobsServerState, ctx: ActorContext<JobsServerMessage>, type: string): Promise<void> {
  const monitor = await state.monitorSup.startChild({
    id: type,
    start: actorStart(activityMonitor, { ...state.args.activityMonitor, type, supervisor: state.args.activityMonitorSup }, { name: `activity_monitor:${type}` }),
    restart: 'temporary',
  });
  const notifierRef = await state.notifierSup.startChild({
    id: type,
    start: actorStart(notifier, { ...state.args.notifier, type, supervisor: state.args.notifierSup }, { name: `notifier:${type}` }),
    restart: 'temporary',
  });
  if (monitor === undefined || notifierRef === undefined) throw new Error(`the children of type ${type} did not start`);
  state.types.set(type, {
    monitor: { id: monitor.id, ref: ctx.monitor(monitor) },
    notifier: { id: notifierRef.id, ref: ctx.monitor(notifierRef) },
  });
}

async function stopType(state: JobsServerState, ctx: ActorContext<JobsServerMessage>, type: string): Promise<void> {
  const children = state.types.get(type)!;
  for (const child of [children.monitor, children.notifier]) {
    ctx.demonitor(child.ref);
    state.dropped.add(child.ref);
  }
  await state.monitorSup.terminateChild(type).catch(() => {});
  await state.notifierSup.terminateChild(type).catch(() => {});
  state.types.delete(type);
}
