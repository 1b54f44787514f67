// What the end, removal or new run of a flow job leaves for its
// transaction: the bodies that end jobs (job-outcomes.ts, job-operations.ts,
// job-transitions.ts) note here what happened to a flow job, and
// job-flows.ts does the work once every body of the transaction has run
// (see the top of that file for why, and for the rules). Kept apart from
// job-flows.ts because that work ends jobs through those same bodies: the
// bodies depend on this note-taking only, and the work on them.

import type { Transaction } from '../storage/interfaces.js';
import type { TypeKeys } from './job-keys.js';
import type { JobOutcome } from './job-record.js';

/** One thing that happened to a flow job in a transaction. */
export type FlowEvent =
  | { readonly kind: 'ended'; readonly type: string; readonly id: string; readonly outcome: JobOutcome }
  | { readonly kind: 'removed'; readonly type: string; readonly id: string }
  | { readonly kind: 'restarted'; readonly type: string; readonly id: string };

const eventsOf = new WeakMap<Transaction, FlowEvent[]>();

function note(tx: Transaction, event: FlowEvent): void {
  let list = eventsOf.get(tx);
  if (list === undefined) {
    list = [];
    eventsOf.set(tx, list);
  }
  list.push(event);
}

/** The events noted in `tx` and not yet handled (the list itself: handling one may note more), if any. */
export function flowEventsOf(tx: Transaction): FlowEvent[] | undefined {
  return eventsOf.get(tx);
}

/** Forgets what an attempt of `tx` noted: a retried attempt runs its bodies, and notes it, again. */
export function discardFlowWork(tx: Transaction): void {
  eventsOf.delete(tx);
}

/** A flow job ended as `outcome`: its parent counts it, and a cancelled one's children are cancelled. */
export function flowMemberEnded(tx: Transaction, keys: TypeKeys, id: string, outcome: JobOutcome): void {
  note(tx, { kind: 'ended', type: keys.type, id, outcome });
}

/** A flow job was removed. */
export function flowMemberRemoved(tx: Transaction, keys: TypeKeys, id: string): void {
  note(tx, { kind: 'removed', type: keys.type, id });
}

/** A flow job that had ended runs again: a parent still waiting counts it as unfinished again. */
export function flowMemberRestarted(tx: Transaction, keys: TypeKeys, id: string): void {
  note(tx, { kind: 'restarted', type: keys.type, id });
}
