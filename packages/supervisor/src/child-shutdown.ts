// OTP's supervisor:shutdown/2 and terminate_dynamic_children: how a
// supervisor ends a child and knows for sure it is gone.
//
// The supervisor monitors the child before signalling it and waits for the
// DOWN, not for the link's EXIT: a child that unlinked itself would otherwise
// hang the supervisor. Afterwards it unlinks and takes the EXIT that the link
// may already have queued, so it is not mistaken for a crash later.

import { type ActorContext, type ActorId, type DownMessage, type ExitMessage, type ExitReason, MAX_TIMER_MS } from '@jobtree/actors';
import type { Shutdown } from './interfaces.js';

function isDown(msg: unknown, monitors: ReadonlySet<string>): msg is DownMessage {
  const down = msg as Partial<DownMessage> | null;
  return (
    typeof down === 'object' && down !== null && down.type === 'DOWN' && typeof down.ref === 'string' && monitors.has(down.ref)
  );
}

function isExitFrom(msg: unknown, actor: ActorId): msg is ExitMessage {
  const exit = msg as Partial<ExitMessage> | null;
  return typeof exit === 'object' && exit !== null && exit.type === 'EXIT' && exit.from === actor;
}

/** Waits for a DOWN of one of `monitors` until `deadline` (a performance.now() time); undefined on timeout. */
async function receiveDown<M>(ctx: ActorContext<M>, monitors: ReadonlySet<string>, deadline: number): Promise<DownMessage | undefined> {
  const forever = deadline === Number.POSITIVE_INFINITY;
  for (;;) {
    const left = forever ? MAX_TIMER_MS : Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(deadline - performance.now())));
    const down = await ctx.receive((msg: unknown) => isDown(msg, monitors), left);
    if (down !== undefined) return down as DownMessage;
    if (!forever && performance.now() >= deadline) return undefined;
  }
}

/** Unlinks and prefers the reason the link reported, as OTP's unlink_flush. */
async function unlinkFlush<M>(ctx: ActorContext<M>, actor: ActorId, downReason: ExitReason): Promise<ExitReason> {
  ctx.unlink({ id: actor });
  const exit = (await ctx.receive((msg: unknown) => isExitFrom(msg, actor), 0)) as ExitMessage | undefined;
  return exit?.reason ?? downReason;
}

function deadlineFor(shutdown: Shutdown): number {
  if (typeof shutdown === 'number') return performance.now() + shutdown;
  return Number.POSITIVE_INFINITY;
}

/** Terminates one child per its shutdown spec; resolves with the reason it ended with. */
export async function shutdownChild<M>(ctx: ActorContext<M>, actor: ActorId, shutdown: Shutdown): Promise<ExitReason> {
  const monitor = ctx.monitor({ id: actor });
  const monitors = new Set([monitor]);
  if (shutdown === 'brutal_kill') ctx.kill({ id: actor });
  else ctx.exit({ id: actor }, 'shutdown');
  let down = await receiveDown(ctx, monitors, deadlineFor(shutdown));
  if (down === undefined) {
    ctx.kill({ id: actor });
    down = await receiveDown(ctx, monitors, Number.POSITIVE_INFINITY);
  }
  return unlinkFlush(ctx, actor, (down as DownMessage).reason);
}

/**
 * Terminates many children of one template at once (a simple_one_for_one supervisor's shutdown):
 * all are signalled together and share one shutdown timer. Calls `onExit` as each one ends.
 */
export async function shutdownChildren<M>(
  ctx: ActorContext<M>,
  actors: readonly ActorId[],
  shutdown: Shutdown,
  onExit: (actor: ActorId, reason: ExitReason) => void,
): Promise<void> {
  const byMonitor = new Map<string, ActorId>();
  for (const actor of actors) {
    byMonitor.set(ctx.monitor({ id: actor }), actor);
    if (shutdown === 'brutal_kill') ctx.kill({ id: actor });
    else ctx.exit({ id: actor }, 'shutdown');
  }
  const pending = new Set(byMonitor.keys());
  let deadline = deadlineFor(shutdown);
  while (pending.size > 0) {
    const down = await receiveDown(ctx, pending, deadline);
    if (down === undefined) {
      for (const monitor of pending) ctx.kill({ id: byMonitor.get(monitor) as ActorId });
      deadline = Number.POSITIVE_INFINITY;
      continue;
    }
    pending.delete(down.ref);
    const actor = byMonitor.get(down.ref) as ActorId;
    onExit(actor, await unlinkFlush(ctx, actor, down.reason));
  }
}
