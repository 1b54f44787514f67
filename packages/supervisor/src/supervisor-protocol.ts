// The supervisor's protocol: what its handle (supervisor.ts) asks of the
// supervisor actor (supervisor-actor.ts), and the replies.

import type { SupervisorErrorData } from './errors.js';

/** The supervisor's protocol: calls from its handle, and the retry it casts to itself. */
export type SupervisorRequest =
  /** `child` is a ChildSpec, or for simple_one_for_one the new child's args. */
  | { type: 'start_child'; child: unknown }
  /** `target` is a spec id, or an ActorId when `byActor` (always an ActorId for simple_one_for_one). */
  | { type: 'terminate_child'; target: string; byActor: boolean }
  | { type: 'restart_child'; id: string }
  | { type: 'delete_child'; id: string }
  /** `target` as for terminate_child. */
  | { type: 'get_childspec'; target: string; byActor: boolean }
  /** `target` is a spec id or an ActorId (always an ActorId for simple_one_for_one). */
  | { type: 'which_child'; target: string; byActor: boolean }
  | { type: 'which_children' }
  | { type: 'count_children' }
  | { type: 'stop' }
  /** A restart that failed is retried through the mailbox, so calls (e.g. `stop`) can come in between. */
  | { type: 'try_again_restart'; key: string };

export type SupervisorReply<T> = { ok: true; value: T } | { ok: false; error: SupervisorErrorData };

export function ok<T>(value: T): SupervisorReply<T> {
  return { ok: true, value };
}

export function fail(error: SupervisorErrorData): SupervisorReply<never> {
  return { ok: false, error };
}

const REQUEST_TYPES: ReadonlySet<string> = new Set<SupervisorRequest['type']>([
  'start_child',
  'terminate_child',
  'restart_child',
  'delete_child',
  'get_childspec',
  'which_child',
  'which_children',
  'count_children',
  'stop',
  'try_again_restart',
]);

// Checked by hand rather than with `isMessage`, which would end the supervisor (and all its
// children) for one stray message: OTP's supervisor ignores what it does not understand.
export function isRequest(msg: unknown): msg is SupervisorRequest {
  return typeof msg === 'object' && msg !== null && REQUEST_TYPES.has((msg as { type?: unknown }).type as string);
}
