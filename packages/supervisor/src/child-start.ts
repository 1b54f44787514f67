// OTP's supervisor:do_start_child: how a supervisor starts one child from its
// spec, and what a failed start is reported as.
//
// A child is either spawned from its actor definition, linked, or made by a
// start function, which must resolve to an ActorRef (linked again here, in
// case the function did not) or to 'ignore'. Whatever goes wrong becomes an
// exit reason, so a failed start is an outcome rather than a throw.

import { describeReason } from '@jobtree/actors';
import type { ActorContext, ActorId, ActorRef, ExitReason } from '@jobtree/actors';
import { SupervisorError, type SupervisorErrorData } from './errors.js';
import { reasonFromError } from './exit-reason.js';
import type { ActorStart } from './interfaces.js';
import type { CheckedChildSpec } from './specs.js';

/** A started child (`actor` undefined when its start function answered 'ignore'), or why it did not start. */
export type StartOutcome = { ok: true; actor: ActorId | undefined } | { ok: false; reason: ExitReason };

function isActorRef(value: unknown): value is ActorRef {
  return typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string';
}

/** Starts one child of `spec` with `args`, linked to the supervisor whose context `ctx` is. */
export async function startChildProcess(ctx: ActorContext<unknown>, spec: CheckedChildSpec, args: unknown): Promise<StartOutcome> {
  try {
    if (typeof spec.start === 'function') {
      const result = await spec.start(ctx, args);
      if (result === 'ignore') return { ok: true, actor: undefined };
      if (!isActorRef(result)) {
        throw new SupervisorError({
          code: 'start_failed',
          message: `child '${spec.id}': a start function must resolve to an ActorRef or 'ignore'`,
          childId: spec.id,
        });
      }
      // Linking again is harmless if the start function linked already, and makes sure it did.
      ctx.link(result);
      return { ok: true, actor: result.id };
    }
    const start: ActorStart = spec.start;
    const ref = await ctx.spawn(start.actor as never, args as never, { ...start.options, link: true });
    return { ok: true, actor: ref.id };
  } catch (error) {
    return { ok: false, reason: reasonFromError(error) };
  }
}

/** The args a static child starts with: its spec's (a start function takes none). */
export function staticArgs(spec: CheckedChildSpec): unknown {
  return typeof spec.start === 'function' ? undefined : spec.start.args;
}

/** What a start that failed with `reason` is reported as. */
export function startFailure(spec: CheckedChildSpec, reason: ExitReason): SupervisorErrorData {
  return {
    code: 'start_failed',
    message: `child '${spec.id}' failed to start: ${describeReason(reason)}`,
    childId: spec.id,
    reason,
  };
}
