// The consistency check's part for job flows (rows in flow-rows.ts, rules
// in job-flows.ts). What holds at every commit:
//
//   (flows, P)            P exists and is a flow job; its `unfinished` is how many of
//                         its children rows name a child whose link names P, not ended
//   (flow_children, P, C) P has its (flows, P) row (so it exists); C is P's child when
//                         it links to P: retention may have pruned C, and a job added
//                         later under its id (alone, or in another flow) is not P's
//   (flow_parents, C)     C exists and is a flow job; `ended` is false only while C has
//                         not finished, and true only while C has finished or P has
//                         left `waiting` (a child run again after that no longer counts)
//   a waiting job         has its (flows, P) row with at least one unfinished child:
//                         else no child's end would ever release it
//
// A link may name a parent that is gone, or that is no longer this child's
// parent: retention prunes a finished parent's rows and leaves its
// children's links until they go (flow-rows.ts), and the id may be a new job's since.

import type { KeyValue } from '../storage/interfaces.js';
import { FLOW_SUBSPACES, decodeFlowRow, decodeParentLink } from './flow-rows.js';
import type { FlowRow, ParentLink } from './flow-rows.js';
import type { JobRecord } from './job-record.js';

/** What a flow row breaks, as the consistency check reports it. */
export type FlowAnomalyKind =
  /** A flow row whose job is missing or in no flow, or a child row whose parent has no flow row. */
  | 'orphan_flow_row'
  /** A parent's count of unfinished children that is not what its children's links say. */
  | 'flow_count_mismatch'
  /** A child's link whose `ended` disagrees with the child's state. */
  | 'flow_link_mismatch'
  /** A waiting job without a flow row or without an unfinished child: nothing will release it. */
  | 'waiting_parent_stuck';

export type ReportAnomaly = (kind: FlowAnomalyKind | 'corrupt_row', type: string, id: string | undefined, detail: string) => void;

/** The flow rows as read in the check's snapshot. */
export interface FlowRowsRead {
  flows: KeyValue[];
  children: KeyValue[];
  parents: KeyValue[];
}

/** The ranges to read, one for each part of {@link FlowRowsRead}. */
export function flowRowRanges(): Record<keyof FlowRowsRead, { begin: Buffer; end: Buffer }> {
  return { flows: FLOW_SUBSPACES.flows.range(), children: FLOW_SUBSPACES.children.range(), parents: FLOW_SUBSPACES.parents.range() };
}

/**
 * Reports every flow row that breaks a rule above. `jobs` holds each
 * job's record by `JSON.stringify([type, id])`.
 */
export function checkFlowRows(read: FlowRowsRead, jobs: ReadonlyMap<string, { record: JobRecord }>, report: ReportAnomaly): void {
  const recordOf = (type: string, id: string): JobRecord | undefined => jobs.get(JSON.stringify([type, id]))?.record;

  const parentRows = new Map<string, { type: string; id: string; row: FlowRow }>();
  for (const { key, value } of read.flows) {
    const [type, id] = unpackPair(FLOW_SUBSPACES.flows, key);
    if (type === undefined || id === undefined) {
      report('corrupt_row', '?', undefined, `flow key ${key.toString('hex')} is not (type, id)`);
      continue;
    }
    let row: FlowRow;
    try {
      row = decodeFlowRow(value, type, id);
    } catch (error) {
      report('corrupt_row', type, id, (error as Error).message);
      continue;
    }
    const record = recordOf(type, id);
    if (record?.inFlow !== true) {
      report('orphan_flow_row', type, id, `the flow row of a job that is ${record === undefined ? 'missing' : 'in no flow'}`);
      continue;
    }
    parentRows.set(JSON.stringify([type, id]), { type, id, row });
  }

  const links = new Map<string, ParentLink>();
  for (const { key, value } of read.parents) {
    const [type, id] = unpackPair(FLOW_SUBSPACES.parents, key);
    if (type === undefined || id === undefined) {
      report('corrupt_row', '?', undefined, `flow parent key ${key.toString('hex')} is not (type, id)`);
      continue;
    }
    try {
      links.set(JSON.stringify([type, id]), decodeParentLink(value, type, id));
    } catch (error) {
      report('corrupt_row', type, id, (error as Error).message);
    }
  }

  // Children rows: each under a parent with its row; those whose child links back count.
  const unfinishedOf = new Map<string, number>();
  for (const { key } of read.children) {
    const items = tryUnpack(FLOW_SUBSPACES.children, key);
    const [type, id, childType, childId] = items;
    if (typeof type !== 'string' || typeof id !== 'string' || typeof childType !== 'string' || typeof childId !== 'string' || items.length !== 4) {
      report('corrupt_row', typeof type === 'string' ? type : '?', undefined, `flow child key ${key.toString('hex')} is not (type, id, childType, childId)`);
      continue;
    }
    const parentKey = JSON.stringify([type, id]);
    const child = `child job ${JSON.stringify(childId)} of type ${JSON.stringify(childType)}`;
    if (!parentRows.has(parentKey)) {
      report('orphan_flow_row', type, id, `the row of ${child} under a parent with no flow row`);
      continue;
    }
    // A child pruned by retention leaves its row under its parent until the
    // parent goes; a job added later under its id (alone, or in another
    // flow) does not link back, and is not this parent's child.
    const link = links.get(JSON.stringify([childType, childId]));
    if (link === undefined || link.type !== type || link.id !== id) continue;
    if (!link.ended) unfinishedOf.set(parentKey, (unfinishedOf.get(parentKey) ?? 0) + 1);
  }

  // Links: of a child that exists in a flow, `ended` as its state says.
  for (const [childKey, link] of links) {
    const [type, id] = JSON.parse(childKey) as [string, string];
    const record = recordOf(type, id);
    if (record?.inFlow !== true) {
      report('orphan_flow_row', type, id, `the parent link of a job that is ${record === undefined ? 'missing' : 'in no flow'}`);
      continue;
    }
    const finished = record.state === 'finished';
    if (!link.ended && finished) report('flow_link_mismatch', type, id, 'a finished child whose end its parent never counted');
    if (link.ended && !finished && recordOf(link.type, link.id)?.state === 'waiting' && parentRows.has(JSON.stringify([link.type, link.id]))) {
      report('flow_link_mismatch', type, id, `a ${record.state} child counted as ended by its parent, which still waits for it`);
    }
  }

  for (const [parentKey, { type, id, row }] of parentRows) {
    const counted = unfinishedOf.get(parentKey) ?? 0;
    if (row.unfinished !== counted) report('flow_count_mismatch', type, id, `its row counts ${row.unfinished} unfinished children, their links ${counted}`);
  }

  for (const [jobKey, { record }] of jobs) {
    if (record.state !== 'waiting') continue;
    const [type, id] = JSON.parse(jobKey) as [string, string];
    const parent = parentRows.get(jobKey);
    if (parent === undefined) report('waiting_parent_stuck', type, id, 'a waiting job with no flow row');
    else if (parent.row.unfinished === 0) report('waiting_parent_stuck', type, id, 'a waiting job with no unfinished child');
  }
}

function unpackPair(space: { unpack(key: Uint8Array): readonly unknown[] }, key: Uint8Array): [string | undefined, string | undefined] {
  const items = tryUnpack(space, key);
  const [type, id] = items;
  if (items.length !== 2) return [undefined, undefined];
  return [typeof type === 'string' ? type : undefined, typeof id === 'string' ? id : undefined];
}

function tryUnpack(space: { unpack(key: Uint8Array): readonly unknown[] }, key: Uint8Array): readonly unknown[] {
  try {
    return space.unpack(key);
  } catch {
    return [];
  }
}
