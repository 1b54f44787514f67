// The keys of one job type's groups (see job-groups.ts), under (groups):
//
//   (groups, 'types', type)                         -> ''  the type has had grouped jobs: its takes go by turns
//   (groups, 'pending', type, group, -prio, stime, id) -> ''  a group's pending queue, keyed as the type's own
//   (groups, 'arrivals', type, group)               -> ''  a grouped job was enqueued: the next take gives its group a turn
//   (groups, 'turns', type, turn, group)            -> ''  groups waiting for their turn, the lowest turn first
//   (groups, 'turn_of', type, group)                -> float64 BE the group's turn, while it has one
//   (groups, 'next_turn', type)                     -> int64 LE counter: the turns handed out so far
//   (groups, 'running', type, group)                -> int64 LE counter of the group's running jobs
//   (groups, 'ended_runs', type)                    -> int64 LE counter: commits that left a group of the type with fewer running jobs (it only grows)
//   (groups, 'takes', type, group)                  -> never stored: the conflict key of the takes under the group's concurrency
//   (groups, 'rate_windows', type, group)           -> the group's current rate window and the starts in it

import { pack } from 'fdb-tuple';
import type { Subspace } from '../keys/subspace.js';
import { appendTupleString, TUPLE_DOUBLE_BYTES, writeTupleDouble } from '../keys/tuple-append.js';

/** The name the type's jobs without a group take their turns under (no group may be empty). */
export const UNGROUPED = '';

export class TypeGroupKeys {
  readonly marker: Buffer;
  readonly pending: Subspace;
  readonly arrivals: Subspace;
  readonly turns: Subspace;
  readonly turnOf: Subspace;
  readonly nextTurn: Buffer;
  readonly running: Subspace;
  /**
   * What a take held back by a group's concurrency watches: a commit that
   * leaves a group with fewer running jobs than it found adds one, and
   * nothing subtracts, so a freed slot always changes it. (A write that
   * ends a run and, for a parked accept, starts the group's next job in
   * the same commit frees nothing, and wakes no one.) The type's running
   * counter would not do: an end and a start of another group's job, in
   * one commit or in two close enough together for a watch to miss, leave
   * it as it was.
   */
  readonly endedRuns: Buffer;
  readonly takes: Subspace;
  readonly rateWindows: Subspace;

  constructor(root: Subspace, type: string) {
    this.marker = root.pack(['types', type]);
    this.pending = root.subspace('pending', type);
    this.arrivals = root.subspace('arrivals', type);
    this.turns = root.subspace('turns', type);
    this.turnOf = root.subspace('turn_of', type);
    this.nextTurn = root.pack(['next_turn', type]);
    this.running = root.subspace('running', type);
    this.endedRuns = root.pack(['ended_runs', type]);
    this.takes = root.subspace('takes', type);
    this.rateWindows = root.subspace('rate_windows', type);
  }

  /** The prefix of every pending key of `group`. */
  queuePrefix(group: string): Buffer {
    return appendTupleString(this.pending.prefix, group);
  }

  /** A pending key of `group`: as the type's own pending key (job-keys.ts), under the group's prefix. */
  pendingKey(group: string, priority: number, scheduledTime: number, id: string): Buffer {
    const prefix = Buffer.concat([this.queuePrefix(group), pack([priority === 0 ? 0 : -priority])]);
    const rank = Buffer.allocUnsafe(prefix.length + TUPLE_DOUBLE_BYTES);
    prefix.copy(rank, 0);
    writeTupleDouble(rank, prefix.length, scheduledTime);
    return appendTupleString(rank, id);
  }

  arrival(group: string): Buffer {
    return appendTupleString(this.arrivals.prefix, group);
  }

  turn(turn: number, group: string): Buffer {
    return this.turns.pack([turn, group]);
  }

  turnOfKey(group: string): Buffer {
    return appendTupleString(this.turnOf.prefix, group);
  }

  runningKey(group: string): Buffer {
    return appendTupleString(this.running.prefix, group);
  }

  takesKey(group: string): Buffer {
    return appendTupleString(this.takes.prefix, group);
  }

  rateWindowKey(group: string): Buffer {
    return appendTupleString(this.rateWindows.prefix, group);
  }
}
