// The mailbox form of a flow subscription, for actors: the calling actor
// subscribes to every job of the tree under a job (as `subscribeJob`
// does, through the notifiers, or the owner's in a client process of a
// shared store), and gets back the tree with, for each job, its
// subscription's ref and its parent in the flow. Each event arrives as the
// `JobEvent` cast of its job; its `ref` says which job of the tree it is
// (`flowJobOf`), and the root's `finished` or `not_found` is the flow's end.

import type { ActorContext } from '@jobtree/actors';
import { type FlowJobRef, type FlowNode, JobsError } from '@jobtree/core';
import { type ActorSubscription, subscribeJob, unsubscribeJob } from './actor-subscription.js';
import { jobsCore } from './bridge-client.js';
import type { JobEvent } from './job-event.js';

/** One job of a subscribed flow: its subscription (as `subscribeJob` gives it) and its parent in the flow. */
export type ActorFlowJob = ActorSubscription & {
  type: string;
  id: string;
  /** `undefined` for a root that is no job's child. */
  parent: FlowJobRef | undefined;
};

/** What `subscribeFlowJobs` gives an actor. */
export interface ActorFlowSubscription {
  /** The flow as read before subscribing. */
  tree: FlowNode;
  /** Every job of the tree, the root first; a job that had ended (or was gone) has no `ref`: no events come for it. */
  jobs: ActorFlowJob[];
}

/**
 * Subscribes the calling actor to every job of the flow under `type`/`id`.
 * Rejects with `not_found` for a missing job, `not_in_flow` for a job in no
 * flow, `no_type_timeout` as `subscribeJob` does. A notifier keeps one
 * subscription per subscriber and job: a job of the flow the actor had
 * subscribed to already shares that subscription's ref.
 */
export async function subscribeFlowJobs(ctx: ActorContext<never> | ActorContext<unknown>, type: string, id: string): Promise<ActorFlowSubscription> {
  const core = jobsCore(ctx);
  const tree = await core.getFlow(type, id);
  if (tree === undefined) {
    if ((await core.getJobState(type, id)) === undefined) throw new JobsError('not_found', `no job ${JSON.stringify(id)} of type ${JSON.stringify(type)}`);
    throw new JobsError('not_in_flow', `job ${JSON.stringify(id)} of type ${JSON.stringify(type)} is in no flow: subscribe to it alone`);
  }
  const members: Array<{ node: FlowNode; parent: FlowJobRef | undefined }> = [];
  const visit = (node: FlowNode, parent: FlowJobRef | undefined): void => {
    members.push({ node, parent });
    for (const child of node.children) visit(child, { type: node.type, id: node.id });
  };
  visit(tree, tree.parent);
  const jobs: ActorFlowJob[] = [];
  try {
    for (const { node, parent } of members) {
      if (node !== tree && node.state === undefined) {
        // Gone when read (or its id another job's since, which is not this flow's): nothing to follow.
        jobs.push({ ref: undefined, state: 'not_found', data: undefined, notifierMonitor: undefined, type: node.type, id: node.id, parent });
        continue;
      }
      const sub = await subscribeJob(ctx, node.type, node.id);
      jobs.push({ ...sub, type: node.type, id: node.id, parent });
    }
  } catch (error) {
    await unsubscribeFlowJobs(ctx, { tree, jobs });
    throw error;
  }
  return { tree, jobs };
}

/** The job of the flow an event belongs to, or `undefined` for an event of another subscription. */
export function flowJobOf(flow: ActorFlowSubscription, event: JobEvent): ActorFlowJob | undefined {
  return flow.jobs.find((job) => job.ref !== undefined && job.ref === event.ref);
}

/** Ends the subscriptions of every job of the flow; events already in the mailbox stay there. */
export async function unsubscribeFlowJobs(ctx: ActorContext<never> | ActorContext<unknown>, flow: ActorFlowSubscription): Promise<void> {
  for (const job of flow.jobs) {
    if (job.ref !== undefined) await unsubscribeJob(ctx, job.type, job.ref).catch(() => undefined);
  }
}
