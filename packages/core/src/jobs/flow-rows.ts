// The rows that tie the jobs of a flow together (see job-flows.ts):
//
//   (flows, type, id)                             -> JSON { onChildFailure, unfinished }
//                                                    a parent's policy and how many of its
//                                                    children have not ended yet
//   (flow_children, type, id, childType, childId) -> ''  one row per child of a parent
//   (flow_parents, childType, childId)            -> JSON { type, id, ended }
//                                                    a child's parent, and whether its end
//                                                    has been counted there
//
// Only jobs whose record has the flow flag (job-record.ts) have rows here,
// so a job outside flows never reads them.

import { unpack } from 'fdb-tuple';
import { JobsError } from '../errors.js';
import { Subspace } from '../keys/subspace.js';
import type { ReadTransaction, Transaction } from '../storage/interfaces.js';
import { decodeJobData, encodeJobData } from './job-data.js';

/**
 * What a parent does when one of its children fails, is cancelled or is
 * removed before it ended: `fail` ends the parent as failed at once (an
 * error naming the child); `ignore` counts the child as ended, so the
 * parent runs once every child has ended, whatever their outcomes;
 * `continue` makes the parent pending at once, its other children going on.
 */
export type ChildFailurePolicy = 'fail' | 'ignore' | 'continue';

export const CHILD_FAILURE_POLICIES: readonly ChildFailurePolicy[] = ['fail', 'ignore', 'continue'];

/** A parent's row. */
export interface FlowRow {
  onChildFailure: ChildFailurePolicy;
  /** Children whose end has not been counted yet. */
  unfinished: number;
}

/** A child's row: its parent, and whether its end was counted there. */
export interface ParentLink {
  type: string;
  id: string;
  ended: boolean;
}

/** A job of a flow, by type and id. */
export interface FlowJobRef {
  type: string;
  id: string;
}

const root = Subspace.of('jobs');
const flows = root.subspace('flows');
const children = root.subspace('flow_children');
const parents = root.subspace('flow_parents');

export function flowKey(type: string, id: string): Buffer {
  return flows.pack([type, id]);
}

export function childKey(parent: FlowJobRef, child: FlowJobRef): Buffer {
  return children.pack([parent.type, parent.id, child.type, child.id]);
}

export function parentKey(type: string, id: string): Buffer {
  return parents.pack([type, id]);
}

/** The subspaces of the rows above, for a check that reads them all (consistency.ts). */
export const FLOW_SUBSPACES = { flows, children, parents } as const;

export async function readFlowRow(tx: ReadTransaction, type: string, id: string): Promise<FlowRow | undefined> {
  const value = await tx.get(flowKey(type, id));
  return value === undefined ? undefined : decodeFlowRow(value, type, id);
}

/** A parent's row; `corrupt_record` for one that does not decode. */
export function decodeFlowRow(value: Buffer, type: string, id: string): FlowRow {
  let row: Partial<FlowRow> | null;
  try {
    row = decodeJobData(value) as Partial<FlowRow> | null;
  } catch {
    row = null;
  }
  if (row === null || typeof row.unfinished !== 'number' || !CHILD_FAILURE_POLICIES.includes(row.onChildFailure as ChildFailurePolicy)) {
    throw new JobsError('corrupt_record', `the flow row of job ${id} of type ${type} does not decode`);
  }
  return row as FlowRow;
}

export function writeFlowRow(tx: Transaction, type: string, id: string, row: FlowRow): void {
  tx.set(flowKey(type, id), encodeJobData(row));
}

export async function readParentLink(tx: ReadTransaction, type: string, id: string): Promise<ParentLink | undefined> {
  const value = await tx.get(parentKey(type, id));
  return value === undefined ? undefined : decodeParentLink(value, type, id);
}

/** A child's link; `corrupt_record` for one that does not decode. */
export function decodeParentLink(value: Buffer, type: string, id: string): ParentLink {
  let link: Partial<ParentLink> | null;
  try {
    link = decodeJobData(value) as Partial<ParentLink> | null;
  } catch {
    link = null;
  }
  if (link === null || typeof link.type !== 'string' || typeof link.id !== 'string' || typeof link.ended !== 'boolean') {
    throw new JobsError('corrupt_record', `the parent row of job ${id} of type ${type} does not decode`);
  }
  return link as ParentLink;
}

export function writeParentLink(tx: Transaction, type: string, id: string, link: ParentLink): void {
  tx.set(parentKey(type, id), encodeJobData(link));
}

/** The children of a parent, in key order (by type, then id). */
export async function readChildren(tx: ReadTransaction, type: string, id: string): Promise<FlowJobRef[]> {
  const range = children.subspace(type, id);
  const { begin, end } = range.range();
  const rows = await tx.getRange(begin, end);
  return rows.map(({ key }) => {
    const [childType, childId] = unpack(key.subarray(range.prefix.length));
    return { type: String(childType), id: String(childId) };
  });
}

/** Clears a parent's flow row and its children rows (not the children's own rows). */
export function clearParentRows(tx: Transaction, type: string, id: string): void {
  tx.clear(flowKey(type, id));
  const { begin, end } = children.subspace(type, id).range();
  tx.clearRange(begin, end);
}

/**
 * Clears what a finished flow job that retention prunes has here: its link
 * to its parent (the parent keeps its row naming the child, and reads it as
 * gone, until it goes itself) and, as a parent, its own rows (its children
 * keep their link until they go).
 */
export function clearPrunedRows(tx: Transaction, type: string, id: string): void {
  tx.clear(parentKey(type, id));
  clearParentRows(tx, type, id);
}

/** Clears a child's link to its parent, both ways. */
export function clearChildRows(tx: Transaction, child: FlowJobRef, link: ParentLink): void {
  tx.clear(parentKey(child.type, child.id));
  tx.clear(childKey(link, child));
}
