// Re-creates couch_jobs_notifier, with the final couch_jobs semantics: one per
// job type, it keeps the subscriptions to that type's jobs and, each time its
// linked type monitor reports a change of the type's activity stamp, reads
// the subscribed jobs in one bridge call and casts a `JobEvent` to each
// subscriber whose job changed. Subscribers are monitored: a dead one is
// unsubscribed. Unlike couch_jobs_notifier, `unsubscribe` removes from the right table
// and demonitors. Its type monitor polls only while it has subscriptions (see
// type-monitor.ts): told of a change while it has none, it answers so, and
// its first new subscription resumes the monitor.

import { type ActorContext, type ActorId, type MonitorRef, defineActor } from '@jobtree/actors';
import type { Versionstamp } from '@jobtree/core';
import { badMessage, hasType, onExit, refuseCall, refuseCast } from './bad-message.js';
import { type JobsCore, jobsCore } from './bridge-client.js';
import { type JobEvent, type SubscriptionState, isTerminal } from './job-event.js';
import typeMonitor from './type-monitor.js';

export interface NotifierArgs {
  type: string;
  /** The registered name of its supervisor, whose exit signal it obeys (with its type monitor's). */
  supervisor: string;
  holdoffMs: number;
  pollTimeoutMs: number;
  retryDelayMs: number;
}

export type NotifierMessage =
  /** call: subscribe `subscriber` to job `id`; replies a {@link SubscribeReply}. */
  | { type: 'subscribe'; id: string; subscriber: ActorId }
  /** call: end a subscription and drop it; replies `true` when it existed. */
  | { type: 'unsubscribe'; ref: string }
  /** call, from the linked type monitor: the type's activity stamp changed; replies whether anyone is subscribed. */
  | { type: 'type_updated'; versionstamp: Versionstamp | undefined }
  /** call: how many subscriptions are live (introspection, tests). */
  | { type: 'count' };

import type { SubscribeReply } from './subscribe-replies.js';

export type { SubscribeReply };

interface Subscription {
  ref: string;
  id: string;
  subscriber: ActorId;
  state: SubscriptionState;
  /** The data last reported, serialised, to tell an update that changed it. */
  data: string;
  /**
   * Made since the last wake-up: the next one's list of updated jobs may
   * hold updates the subscribe reply already showed, so only a change of
   * state or data is reported then.
   */
  fresh: boolean;
}

interface NotifierState {
  args: NotifierArgs;
  /** Its supervisor and its type monitor: their exits end it. */
  linked: Array<ActorId | undefined>;
  monitor: ActorId;
  /** The type monitor was told nobody is subscribed, and waits for a `resume`. */
  monitorPaused: boolean;
  core: JobsCore;
  since: Versionstamp | undefined;
  serial: number;
  subs: Map<string, Subscription>;
  byJob: Map<string, Set<string>>;
  bySubscriber: Map<ActorId, { monitor: MonitorRef; refs: Set<string> }>;
  monitors: Map<MonitorRef, ActorId>;
}

const MESSAGES = ['subscribe', 'unsubscribe', 'type_updated', 'count'] as const;

export default defineActor<NotifierMessage, NotifierArgs, NotifierState>(import.meta.url, {
  async init(args, ctx) {
    ctx.trapExit(true);
    const parent = ctx.whereis(args.supervisor);
    const core = jobsCore(ctx);
    const since = await core.getActivityVersionstamp(args.type);
    const monitor = await ctx.spawn(
      typeMonitor,
      { type: args.type, notifier: ctx.self.id, since, holdoffMs: args.holdoffMs, pollTimeoutMs: args.pollTimeoutMs, retryDelayMs: args.retryDelayMs },
      { link: true, name: `type_monitor:${args.type}` },
    );
    return {
      args,
      linked: [parent, monitor.id],
      monitor: monitor.id,
      monitorPaused: false,
      core,
      since,
      serial: 0,
      subs: new Map(),
      byJob: new Map(),
      bySubscriber: new Map(),
      monitors: new Map(),
    };
  },
  async handleCall(msg, state, ctx) {
    if (!hasType(msg, ...MESSAGES)) return refuseCall(msg);
    switch (msg.type) {
      case 'subscribe':
        return { reply: await subscribe(state, ctx, msg.id, msg.subscriber) };
      case 'unsubscribe':
        return { reply: unsubscribe(state, ctx, msg.ref) };
      case 'type_updated': {
        await notify(state, ctx);
        const subscribed = state.subs.size > 0;
        if (!subscribed) state.monitorPaused = true;
        return { reply: subscribed };
      }
      case 'count':
        return { reply: state.subs.size };
    }
  },
  handleCast: refuseCast,
  handleInfo(msg, state, ctx) {
    if (msg.type === 'EXIT') {
      onExit(msg, state.linked, ctx);
      return state;
    }
    if (msg.type === 'DOWN' && state.monitors.has(msg.ref)) {
      const subscriber = state.monitors.get(msg.ref)!;
      for (const ref of [...(state.bySubscriber.get(subscriber)?.refs ?? [])]) drop(state, ctx, ref);
      return state;
    }
    ctx.stop(badMessage('bad_info', msg));
    return state;
  },
});

async function subscribe(
  state: NotifierState,
  ctx: ActorContext<NotifierMessage>,
  id: string,
  subscriber: ActorId,
): Promise<SubscribeReply> {
  const job = await state.core.getJob(state.args.type, id);
  if (job === undefined) return { ref: undefined, state: 'not_found', data: undefined };
  if (job.state === 'finished') return { ref: undefined, state: 'finished', data: job.data };
  // One subscriber, one job: one subscription, however often it subscribes.
  for (const ref of state.byJob.get(id) ?? []) {
    const existing = state.subs.get(ref)!;
    if (existing.subscriber === subscriber) return { ref, state: job.state, data: job.data };
  }
  const ref = `${ctx.self.id}/${++state.serial}`;
  state.subs.set(ref, { ref, id, subscriber, state: job.state, data: JSON.stringify(job.data), fresh: true });
  if (state.monitorPaused) {
    // Its poll starts from the stamp it last reported, older than the job read above: a change since is reported.
    state.monitorPaused = false;
    ctx.cast(state.monitor, { type: 'resume' });
  }
  let refs = state.byJob.get(id);
  if (refs === undefined) {
    refs = new Set();
    state.byJob.set(id, refs);
  }
  refs.add(ref);
  let watched = state.bySubscriber.get(subscriber);
  if (watched === undefined) {
    const monitor = ctx.monitor(subscriber);
    watched = { monitor, refs: new Set() };
    state.bySubscriber.set(subscriber, watched);
    state.monitors.set(monitor, subscriber);
  }
  watched.refs.add(ref);
  return { ref, state: job.state, data: job.data };
}

function unsubscribe(state: NotifierState, ctx: ActorContext<NotifierMessage>, ref: string): boolean {
  if (!state.subs.has(ref)) return false;
  drop(state, ctx, ref);
  return true;
}

/** Forgets a subscription, and stops monitoring a subscriber that has no other. */
function drop(state: NotifierState, ctx: ActorContext<NotifierMessage>, ref: string): void {
  const sub = state.subs.get(ref);
  if (sub === undefined) return;
  state.subs.delete(ref);
  const refs = state.byJob.get(sub.id);
  refs?.delete(ref);
  if (refs?.size === 0) state.byJob.delete(sub.id);
  const watched = state.bySubscriber.get(sub.subscriber);
  watched?.refs.delete(ref);
  if (watched !== undefined && watched.refs.size === 0) {
    ctx.demonitor(watched.monitor);
    state.monitors.delete(watched.monitor);
    state.bySubscriber.delete(sub.subscriber);
  }
}

async function notify(state: NotifierState, ctx: ActorContext<NotifierMessage>): Promise<void> {
  const ids = [...state.byJob.keys()];
  if (ids.length === 0) {
    state.since = await state.core.getActivityVersionstamp(state.args.type);
    return;
  }
  const snapshot = await state.core.notifierSnapshot(state.args.type, ids, state.since);
  state.since = snapshot.versionstamp;
  const active = new Set(snapshot.active);
  for (const job of snapshot.jobs) {
    const refs = state.byJob.get(job.id);
    if (refs === undefined) continue;
    const data = JSON.stringify(job.data);
    for (const ref of [...refs]) {
      const sub = state.subs.get(ref)!;
      // `running` is reported on accept and on every update, even one that
      // leaves the data as it was; other states only when they change.
      const changed =
        job.state !== sub.state || data !== sub.data || (job.state === 'running' && active.has(job.id) && !sub.fresh);
      sub.fresh = false;
      if (!changed) continue;
      sub.state = job.state;
      sub.data = data;
      const event: JobEvent = { type: 'job_event', ref, jobType: state.args.type, id: job.id, state: job.state, data: job.data };
      ctx.cast(sub.subscriber, event);
      if (isTerminal(job.state)) drop(state, ctx, ref);
    }
  }
}
