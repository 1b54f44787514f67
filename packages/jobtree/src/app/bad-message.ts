// The jobs actors stop on any message they do not understand, as the
// couch_jobs gen_servers do (`{stop, {bad_cast, Msg}, St}`): crashing on
// unexpected input instead of limping on.

import type { ActorContext, ActorId, ExitMessage, ExitReason } from '@jobtree/actors';

export type BadMessageKind = 'bad_cast' | 'bad_call' | 'bad_info';

/** The exit reason of an actor that got a message it does not understand. */
export function badMessage(kind: BadMessageKind, msg: unknown): ExitReason {
  let shown: string;
  try {
    shown = JSON.stringify(msg) ?? String(msg);
  } catch {
    shown = String(msg);
  }
  if (shown.length > 200) shown = `${shown.slice(0, 200)}…`;
  return { error: { name: kind, code: kind, message: `${kind}: ${shown}` } };
}

/** Whether `msg` is an object whose `type` is one of `types`. */
export function hasType<T extends string>(msg: unknown, ...types: T[]): msg is { type: T } {
  return typeof msg === 'object' && msg !== null && types.includes((msg as { type?: unknown }).type as T);
}

/**
 * The jobs actors trap exits, so that an exit signal from a process they are
 * not linked to is a message they do not understand (`bad_info`), as a stray
 * message is for a gen_server. An exit from a linked process (the parent
 * supervisor, a notifier's type monitor) still ends the actor with that
 * reason, as it would without trapping.
 */
export function onExit<M>(msg: ExitMessage, linked: ReadonlyArray<ActorId | undefined>, ctx: ActorContext<M>): void {
  if (!linked.includes(msg.from)) ctx.stop(badMessage('bad_info', msg));
  else if (msg.reason !== 'normal') ctx.stop(msg.reason);
}

/** `handleCast` of a jobs actor that takes no casts: any cast stops it with `bad_cast`. */
export function refuseCast<M, S>(msg: M, state: S, ctx: ActorContext<M>): S {
  ctx.stop(badMessage('bad_cast', msg));
  return state;
}

/** `handleCall` of a jobs actor that takes no calls: it replies `{ error: 'bad_call' }`, then stops. */
export function refuseCall(msg: unknown): { reply: { error: 'bad_call' }; stop: ExitReason } {
  return { reply: { error: 'bad_call' }, stop: badMessage('bad_call', msg) };
}
