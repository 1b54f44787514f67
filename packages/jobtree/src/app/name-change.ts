// Waiting for a registered name to change hands: woken by the actor system's
// `spawned` and `exited` events for that name, not by looking again on a
// timer. Set a watch up in the same synchronous step as the look that found
// nothing to do yet: no change between the two is then missed.

import { type ActorSystem, MAX_TIMER_MS } from '@jobtree/actors';

/** A watch on some registered names, until their next change or a deadline. */
export interface NameChange {
  /**
   * Resolves at the first spawn or exit of an actor registered under one of
   * the names, at the deadline (early, for a deadline beyond the longest
   * timer: look again and watch anew), or when `signal` aborts.
   */
  readonly changed: Promise<void>;
  /** Stops watching; `changed` resolves. */
  stop(): void;
}

/** Watches `names` until one of them changes hands, `deadline` (a `performance.now()` time) passes or `signal` aborts. */
export function watchNames(events: ActorSystem['events'], names: readonly string[], deadline: number, signal?: AbortSignal): NameChange {
  let stop!: () => void;
  const changed = new Promise<void>((resolve) => {
    const onEvent = ({ name }: { name: string | undefined }): void => {
      if (name !== undefined && names.includes(name)) stop();
    };
    const end = (): void => stop();
    const timer = setTimeout(end, Math.min(MAX_TIMER_MS, Math.max(0, deadline - performance.now())));
    stop = () => {
      clearTimeout(timer);
      events.off('spawned', onEvent);
      events.off('exited', onEvent);
      signal?.removeEventListener('abort', end);
      resolve();
    };
    events.on('spawned', onEvent);
    events.on('exited', onEvent);
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', end, { once: true });
  });
  return { changed, stop };
}

/**
 * Resolves once no actor holds `name` (as `whereis` sees it), or at
 * `deadline`, whichever comes first.
 */
export async function nameReleased(
  events: ActorSystem['events'],
  whereis: (name: string) => string | undefined,
  name: string,
  deadline: number,
): Promise<void> {
  while (whereis(name) !== undefined && performance.now() < deadline) await watchNames(events, [name], deadline).changed;
}
