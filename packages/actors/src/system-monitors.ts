// `system.monitor(target)`: monitors held by the system itself (id `<0.0>`)
// rather than by an actor, each settled by the target's DOWN.

import type { ActorId, ExitReason, MonitorRef } from './interfaces.js';

export class SystemMonitors {
  #monitors = new Map<MonitorRef, { target: ActorId; resolve: (reason: ExitReason) => void }>();

  /** Resolves with the reason of the DOWN that `ref` gets. */
  add(ref: MonitorRef, target: ActorId): Promise<ExitReason> {
    return new Promise((resolve) => this.#monitors.set(ref, { target, resolve }));
  }

  down(ref: MonitorRef, reason: ExitReason): void {
    const monitor = this.#monitors.get(ref);
    if (monitor === undefined) return;
    this.#monitors.delete(ref);
    monitor.resolve(reason);
  }

  /** Targets that `gone` says are dead (elsewhere) settle with the reason `reasonOf` gives. */
  settleWhere(gone: (target: ActorId) => boolean, reasonOf: (target: ActorId) => ExitReason): void {
    for (const [ref, monitor] of this.#monitors) if (gone(monitor.target)) this.down(ref, reasonOf(monitor.target));
  }
}
