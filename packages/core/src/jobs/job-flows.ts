// Job flows: a parent job added with its children (and theirs) in one
// transaction. A parent is `waiting` (never taken) until its children have
// ended, then `pending`; its handler reads their outcomes (`getChildren`).
// The links live in rows of their own (flow-rows.ts) and every job of a
// flow has the flow flag in its record, so that the ends of other jobs
// read none of them.
//
// When a flow job ends (finish, complete, fail, cancel), is removed or runs
// again (add of a finished job, retry), the body that did it leaves work
// for its transaction here, done once the bodies of the transaction have
// run, one piece after the other: the bodies of a write batch run
// concurrently and could otherwise both read a parent's count of unfinished
// children before either wrote it. That work may end other jobs (a parent
// failed by its child, a cancelled parent's children), whose own work
// joins the queue. The rules:
//
// - A child's end is counted once in its parent's row. When the count
//   reaches 0 a waiting parent becomes pending. A child that fails, is
//   cancelled, or is removed before it ended applies the parent's policy
//   (ChildFailurePolicy).
// - A child that runs again (added again once finished, retried) while its
//   parent still waits counts as unfinished again; once the parent has left
//   `waiting` it no longer changes the parent.
// - Cancelling a flow job cancels its children that have not ended (and
//   theirs). Removing one removes its children that have not ended (and
//   theirs); its ended children stay, as jobs of no flow.
// - Removing a child drops its links (and counts as cancelling it for a
//   parent that still waits for it).
// - Retention prunes a finished child and leaves its parent's row naming
//   it; a job added under its id since is not that child. A parent acts on
//   (and reads) a child only when the child's link names it.

import { JobsError } from '../errors.js';
import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import type { AddOptions, JobError, JobInputOf, JsonValue } from './interfaces.js';
import { decodeJobData } from './job-data.js';
import { ADD_OPTIONS, JOB_OPTION_NAMES, checkId, checkOptions, checkType, describe } from './job-input.js';
import { JobKeys } from './job-keys.js';
import type { TypeKeys } from './job-keys.js';
import { decodeJobRecord, encodeJobRecord, recordInFlow, recordState } from './job-record.js';
import type { JobOutcome, JobRecord, JobState } from './job-record.js';
import { cancelJob } from './job-outcomes.js';
import { removeJob } from './job-operations.js';
import { logFinish } from './finish-log.js';
import {
  CHILD_FAILURE_POLICIES,
  childKey,
  clearChildRows,
  clearParentRows,
  parentKey,
  readChildren,
  readFlowRow,
  readParentLink,
  writeFlowRow,
  writeParentLink,
} from './flow-rows.js';
import type { ChildFailurePolicy, FlowJobRef, ParentLink } from './flow-rows.js';
import { decodeJobError, encodeJobError } from './outcome-rows.js';
import { newJobRecord, touchActivity, writePending } from './job-transitions.js';
import type { Changes } from './job-transitions.js';
import type { OncePerAttempt } from './pending-queue.js';
import { jobChanges } from './write-calls.js';
import { type FlowEvent, flowEventsOf } from './flow-work.js';

export type { ChildFailurePolicy, FlowJobRef };

/** The most jobs one `addFlow` adds (they are written in one transaction). */
export const MAX_FLOW_JOBS = 1_000;

/**
 * One job of a flow: its type, id, data and `add`'s options, and its
 * children, if it has any (each a flow job too: levels nest). A job with
 * children is added `waiting` and becomes pending once they have ended;
 * `onChildFailure` says what happens when one of them fails, is cancelled
 * or is removed.
 */
export interface FlowSpec<T extends string = string> extends AddOptions {
  type: T;
  id: string;
  /** @default null */
  data?: JobInputOf<T>;
  children?: readonly FlowSpec[];
  /** See {@link ChildFailurePolicy}. @default 'fail' */
  onChildFailure?: ChildFailurePolicy;
}

/** A child of a flow job as its parent reads it. */
export interface FlowChild {
  type: string;
  id: string;
  /** `undefined` when the child no longer exists (removed, or pruned by retention). */
  state: JobState | undefined;
  /** Ended children only: how it ended. */
  outcome?: JobOutcome;
  /** A succeeded child's result, when its run gave one. */
  result?: JsonValue;
  /** A failed child's error. */
  error?: JobError;
}

/** A flow as one tree, from the job asked for down. */
export interface FlowNode extends FlowChild {
  /** The root only: its parent, when it is a child itself. */
  parent?: FlowJobRef;
  /** Parents only: their policy, and how many of their children have not ended. */
  onChildFailure?: ChildFailurePolicy;
  unfinished?: number;
  children: FlowNode[];
}

/** What `addFlow` resolves with: the root's state (`waiting` when it has children). */
export type FlowAdded = JobState;

// Every option of `add` (a group included) means the same for a job of a flow.
const FLOW_SPEC_NAMES = new Set(['type', 'id', 'data', 'children', 'onChildFailure', ...JOB_OPTION_NAMES]);

/** The keys of every type, shared by the flow work of every handle (the prefixes are the same). */
const flowKeys = new JobKeys();

// --- adding a flow --------------------------------------------------------

/** One job of a flow, checked and encoded. */
interface CheckedFlowJob {
  type: string;
  id: string;
  changes: Changes;
  parent: FlowJobRef | undefined;
  children: FlowJobRef[];
  onChildFailure: ChildFailurePolicy;
}

/**
 * Checks a flow before anything is written: names, options and data of
 * every job, each job once, no node its own ancestor, at most
 * MAX_FLOW_JOBS. `invalid_flow` for a tree that is not one.
 */
export function checkFlow(flow: unknown): CheckedFlowJob[] {
  const jobs: CheckedFlowJob[] = [];
  const seen = new Set<string>();
  const onPath = new Set<object>();
  const visit = (node: unknown, parent: FlowJobRef | undefined, path: string): FlowJobRef => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      throw new JobsError('invalid_flow', `${path} is an object { type, id, data?, children? }, got ${describe(node)}`);
    }
    if (onPath.has(node)) throw new JobsError('invalid_flow', `${path} is one of its own ancestors: a flow is a tree`);
    for (const name of Object.keys(node)) {
      if (!FLOW_SPEC_NAMES.has(name)) throw new JobsError('invalid_flow', `${path} has an unknown field ${describe(name)}`);
    }
    const spec = node as FlowSpec;
    const type = checkType(spec.type);
    const id = checkId(spec.id);
    const key = JSON.stringify([type, id]);
    if (seen.has(key)) throw new JobsError('invalid_flow', `job ${describe(id)} of type ${describe(type)} is in the flow twice`);
    seen.add(key);
    if (seen.size > MAX_FLOW_JOBS) throw new JobsError('invalid_flow', `a flow holds at most ${MAX_FLOW_JOBS} jobs`);
    const onChildFailure = spec.onChildFailure ?? 'fail';
    if (!CHILD_FAILURE_POLICIES.includes(onChildFailure)) {
      throw new JobsError('invalid_flow', `${path}.onChildFailure is one of ${CHILD_FAILURE_POLICIES.join(', ')}, got ${describe(onChildFailure)}`);
    }
    const { data, children, onChildFailure: _policy, type: _type, id: _id, ...options } = spec;
    if (children !== undefined && !Array.isArray(children)) {
      throw new JobsError('invalid_flow', `${path}.children is an array, got ${describe(children)}`);
    }
    const job: CheckedFlowJob = {
      type,
      id,
      changes: jobChanges(data, checkOptions(options as AddOptions, ADD_OPTIONS)),
      parent,
      children: [],
      onChildFailure,
    };
    jobs.push(job);
    onPath.add(node);
    const self = { type, id };
    (children ?? []).forEach((child: unknown, index: number) => {
      job.children.push(visit(child, self, `${path}.children[${index}]`));
    });
    onPath.delete(node);
    return self;
  };
  visit(flow, undefined, 'the flow');
  const [root] = jobs;
  if (root === undefined || root.children.length === 0) {
    throw new JobsError('invalid_flow', 'a flow has children: to add a job alone, use add');
  }
  return jobs;
}

/**
 * Adds a checked flow in `tx`: every job new (`flow_job_exists` names one
 * that is not, and nothing is written), their types with a timeout. Parents
 * are added `waiting`, leaves `pending`. Resolves with the root's state.
 */
export async function addFlowIn(tx: Transaction, jobs: readonly CheckedFlowJob[], now: number): Promise<FlowAdded> {
  for (const job of jobs) {
    const keys = flowKeys.forType(job.type);
    if ((await tx.get(keys.typeTimeout)) === undefined) {
      throw new JobsError('no_type_timeout', `set a timeout for job type ${describe(job.type)} before adding jobs to it`);
    }
    if ((await tx.get(keys.job(job.id))) !== undefined) {
      throw new JobsError('flow_job_exists', `job ${describe(job.id)} of type ${describe(job.type)} exists already: a flow adds new jobs only`);
    }
  }
  for (const job of jobs) {
    const keys = flowKeys.forType(job.type);
    const { changes } = job;
    const record = newJobRecord(tx, keys, job.id, changes, now, true);
    if (job.children.length > 0) {
      tx.set(keys.job(job.id), encodeJobRecord({ ...record, state: 'waiting' }));
      writeFlowRow(tx, job.type, job.id, { onChildFailure: job.onChildFailure, unfinished: job.children.length });
      for (const child of job.children) tx.set(childKey(job, child), Buffer.alloc(0));
    } else {
      writePending(tx, keys, job.id, record);
    }
    if (job.parent !== undefined) writeParentLink(tx, job.type, job.id, { type: job.parent.type, id: job.parent.id, ended: false });
    touchActivity(tx, keys);
  }
  return jobs[0]?.children.length === 0 ? 'pending' : 'waiting';
}

// --- reading a flow -------------------------------------------------------

/**
 * A job as its flow shows it: its state and, once ended, its outcome. A
 * child read under `parent` that is not that parent's any more (the job
 * there now took the id of one retention pruned) shows as gone.
 */
async function readFlowChild(tx: ReadTransaction, ref: FlowJobRef, parent?: FlowJobRef): Promise<FlowChild> {
  const keys = flowKeys.forType(ref.type);
  const value = await tx.get(keys.job(ref.id));
  const child: FlowChild = { type: ref.type, id: ref.id, state: undefined };
  if (value === undefined) return child;
  if (parent !== undefined && !(await isChildOf(tx, parent, ref, value))) return child;
  const record = decodeJobRecord(value);
  child.state = record.state;
  if (record.outcome === undefined) return child;
  child.outcome = record.outcome;
  if (!record.outcomeRow || record.outcome === 'cancelled') return child;
  const row = await tx.get(keys.outcomeKey(record.outcome, ref.id));
  if (row === undefined) return child;
  if (record.outcome === 'succeeded') child.result = decodeJobData(row);
  else child.error = decodeJobError(row);
  return child;
}

/** The children of a flow job, each with its state and outcome, in key order; `[]` for a job with none. */
export async function readFlowChildren(tx: ReadTransaction, type: string, id: string): Promise<FlowChild[]> {
  const children: FlowChild[] = [];
  for (const ref of await readChildren(tx, type, id)) children.push(await readFlowChild(tx, ref, { type, id }));
  return children;
}

/** The flow under the job `type`/`id`, or `undefined` when it is in no flow (or does not exist). */
export async function readFlow(tx: ReadTransaction, type: string, id: string): Promise<FlowNode | undefined> {
  let link = await readParentLink(tx, type, id);
  // A link its parent's rows no longer name (the parent pruned, or its id a new job's) ties it to no flow.
  if (link !== undefined && (await tx.get(childKey(link, { type, id }))) === undefined) link = undefined;
  const root = await readFlowNode(tx, { type, id }, undefined, 0);
  if (link === undefined && root.children.length === 0 && root.onChildFailure === undefined) return undefined;
  if (link !== undefined) root.parent = { type: link.type, id: link.id };
  return root;
}

async function readFlowNode(tx: ReadTransaction, ref: FlowJobRef, parent: FlowJobRef | undefined, depth: number): Promise<FlowNode> {
  const node: FlowNode = { ...(await readFlowChild(tx, ref, parent)), children: [] };
  // A child gone (or its id another job's now) has no tree of this flow under it.
  if (parent !== undefined && node.state === undefined) return node;
  // A flow is added as a tree of at most MAX_FLOW_JOBS: deeper than that, rows were written by hand.
  if (depth > MAX_FLOW_JOBS) throw new JobsError('corrupt_record', `the flow rows under job ${describe(ref.id)} of type ${describe(ref.type)} loop`);
  const row = await readFlowRow(tx, ref.type, ref.id);
  if (row !== undefined) {
    node.onChildFailure = row.onChildFailure;
    node.unfinished = row.unfinished;
  }
  for (const child of await readChildren(tx, ref.type, ref.id)) node.children.push(await readFlowNode(tx, child, ref, depth + 1));
  return node;
}

// --- the work a flow job's end leaves ---------------------------------------

/**
 * Does the work the bodies run in `tx` left (flow-work.ts), one piece
 * after the other (and what that work leaves in turn); `undefined` when
 * there is none, which is every transaction without a flow job.
 */
export function runFlowWork(tx: Transaction, once?: OncePerAttempt): Promise<void> | undefined {
  const list = flowEventsOf(tx);
  if (list === undefined || list.length === 0) return undefined;
  return drain(tx, list, once);
}

async function drain(tx: Transaction, list: FlowEvent[], once: OncePerAttempt | undefined): Promise<void> {
  try {
    for (let event = list.shift(); event !== undefined; event = list.shift()) {
      if (event.kind === 'ended') await memberEnded(tx, event.type, event.id, event.outcome, once);
      else if (event.kind === 'removed') await memberRemoved(tx, event.type, event.id, once);
      else await memberRestarted(tx, event.type, event.id);
    }
  } catch (error) {
    // The attempt fails: none of its work may run in a retry on the same transaction object.
    list.length = 0;
    throw error;
  }
}

/** `value` once the flow work its call left in `tx` is done: for calls on an application's transaction. */
export async function withFlowWork<T>(tx: Transaction, value: T): Promise<T> {
  await runFlowWork(tx);
  return value;
}

async function memberEnded(tx: Transaction, type: string, id: string, outcome: JobOutcome, once: OncePerAttempt | undefined): Promise<void> {
  await childEnded(tx, type, id, outcome, once);
  if (outcome === 'cancelled') await endChildren(tx, type, id, once, cancelJob);
}

async function memberRemoved(tx: Transaction, type: string, id: string, once: OncePerAttempt | undefined): Promise<void> {
  const link = await readParentLink(tx, type, id);
  if (link !== undefined) {
    await childEnded(tx, type, id, 'removed', once);
    clearChildRows(tx, { type, id }, link);
  }
  for (const child of await readChildren(tx, type, id)) {
    const keys = flowKeys.forType(child.type);
    const value = await tx.get(keys.job(child.id));
    if (value === undefined || !(await isChildOf(tx, { type, id }, child, value))) continue;
    if (recordState(value) !== 'finished') {
      // Its own removal's work clears its links (and goes on down).
      await removeJob(tx, keys, child.id, once);
    } else {
      // An ended child of a removed parent keeps no link to it.
      tx.clear(parentKey(child.type, child.id));
    }
  }
  // Also when no children rows are left (each child removed before it): its
  // own row would otherwise stay, read as a job's added later under this id.
  clearParentRows(tx, type, id);
}

async function memberRestarted(tx: Transaction, type: string, id: string): Promise<void> {
  const link = await readLiveLink(tx, type, id);
  if (link === undefined || !link.ended) return;
  const parent = await tx.get(flowKeys.forType(link.type).job(link.id));
  if (parent === undefined || recordState(parent) !== 'waiting') return;
  const row = await readFlowRow(tx, link.type, link.id);
  if (row === undefined) return;
  writeParentLink(tx, type, id, { ...link, ended: false });
  writeFlowRow(tx, link.type, link.id, { ...row, unfinished: row.unfinished + 1 });
}

/** Ends (cancels or removes) the children of `type`/`id` that have not ended. */
async function endChildren(
  tx: Transaction,
  type: string,
  id: string,
  once: OncePerAttempt | undefined,
  end: (tx: Transaction, keys: TypeKeys, id: string, once?: OncePerAttempt) => Promise<boolean>,
): Promise<void> {
  for (const child of await readChildren(tx, type, id)) {
    const keys = flowKeys.forType(child.type);
    const value = await tx.get(keys.job(child.id));
    if (value === undefined || recordState(value) === 'finished') continue;
    if (await isChildOf(tx, { type, id }, child, value)) await end(tx, keys, child.id, once);
  }
}

/**
 * Whether the job `child` (its record `value`) is the child of `parent`
 * that the parent's rows name. Retention prunes a finished child and leaves
 * the parent's row naming it; a job added later under the same id (alone,
 * or in another flow) is not that child, and its parent's cancel, removal
 * or reads must leave it alone.
 */
async function isChildOf(tx: ReadTransaction, parent: FlowJobRef, child: FlowJobRef, value: Buffer): Promise<boolean> {
  if (!recordInFlow(value)) return false;
  const link = await readParentLink(tx, child.type, child.id);
  return link !== undefined && link.type === parent.type && link.id === parent.id;
}

/** Counts a child's end in its parent's row, once, and applies what it means to a parent that waits. */
async function childEnded(
  tx: Transaction,
  type: string,
  id: string,
  outcome: JobOutcome | 'removed',
  once: OncePerAttempt | undefined,
): Promise<void> {
  const link = await readLiveLink(tx, type, id);
  if (link === undefined || link.ended) return;
  writeParentLink(tx, type, id, { ...link, ended: true });
  const row = await readFlowRow(tx, link.type, link.id);
  if (row === undefined) return;
  const unfinished = Math.max(0, row.unfinished - 1);
  writeFlowRow(tx, link.type, link.id, { ...row, unfinished });
  const parentKeys = flowKeys.forType(link.type);
  const value = await tx.get(parentKeys.job(link.id));
  if (value === undefined || recordState(value) !== 'waiting') return;
  const parent = decodeJobRecord(value);
  if (outcome === 'succeeded' || row.onChildFailure === 'ignore') {
    if (unfinished === 0) release(tx, parentKeys, link.id, parent, once);
    return;
  }
  if (row.onChildFailure === 'continue') {
    release(tx, parentKeys, link.id, parent, once);
    return;
  }
  const reason = outcome === 'failed' ? await childError(tx, type, id) : outcome;
  failParent(tx, parentKeys, link.id, parent, `child job ${describe(id)} of type ${describe(type)} ${reason}`, once);
  await memberEnded(tx, link.type, link.id, 'failed', once);
}

/**
 * A child's link to its parent, when that parent still names it. Retention
 * prunes a finished parent's rows and leaves its children's links (they go
 * with the children): a link whose parent no longer names the child is
 * stale, the parent gone or its id a new job's, whose rows it must not
 * touch; it is cleared here.
 */
async function readLiveLink(tx: Transaction, type: string, id: string): Promise<ParentLink | undefined> {
  const link = await readParentLink(tx, type, id);
  if (link === undefined) return undefined;
  if ((await tx.get(childKey(link, { type, id }))) !== undefined) return link;
  tx.clear(parentKey(type, id));
  return undefined;
}

/** Why a failed child failed, as its error row says. */
async function childError(tx: ReadTransaction, type: string, id: string): Promise<string> {
  const row = await tx.get(flowKeys.forType(type).outcomeKey('failed', id));
  return row === undefined ? 'failed' : `failed: ${decodeJobError(row).message}`;
}

/** A waiting parent becomes pending (due at its scheduled time). */
function release(tx: Transaction, keys: TypeKeys, id: string, parent: JobRecord, once: OncePerAttempt | undefined): void {
  writePending(tx, keys, id, { ...parent, state: 'pending' }, once);
  touchActivity(tx, keys, once);
}

/** A waiting parent ends as failed, its error naming the child that failed it. */
function failParent(tx: Transaction, keys: TypeKeys, id: string, parent: JobRecord, message: string, once: OncePerAttempt | undefined): void {
  const finishedAt = logFinish(tx, keys, 'failed', id, once);
  tx.set(keys.outcomeKey('failed', id), encodeJobError({ name: 'ChildFailedError', message }));
  tx.set(
    keys.job(id),
    encodeJobRecord({ ...parent, state: 'finished', seq: undefined, lock: undefined, resubmit: false, outcome: 'failed', outcomeRow: true, finishedAt }),
  );
  touchActivity(tx, keys, once);
}
