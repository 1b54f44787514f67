// Everything the peer benchmark starts is stopped again, whether the run
// ends normally, throws, or is interrupted with Ctrl-C or SIGTERM: servers
// and scratch folders are registered here as they are created and undone in
// reverse order.

type Undo = () => Promise<void> | void;

interface Step {
  name: string;
  undo: Undo;
  /** A last resort that must be synchronous: run from process.on('exit') if `undo` never ran. */
  lastResort?: () => void;
}

export class Teardown {
  readonly #steps: Step[] = [];
  #running: Promise<void> | undefined;

  constructor() {
    // Servers run in their own process groups (so Ctrl-C reaches only this
    // process, which then stops them in order); if this process is killed
    // before it can, the exit hook still kills them.
    process.on('exit', () => {
      for (const step of this.#steps) step.lastResort?.();
    });
    // One Ctrl-C can arrive twice (from the terminal and relayed by a
    // wrapper such as tsx or pnpm): a repeat must not kill the process
    // before it has stopped its servers. A third one forces the exit, and
    // the exit hook then kills what is left.
    let signals = 0;
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, () => {
        signals++;
        if (signals === 1) {
          console.error(`\n${signal}: stopping everything the benchmark started`);
          void this.run().finally(() => process.exit(130));
        } else if (signals >= 3) {
          process.exit(130);
        }
      });
    }
  }

  add(name: string, undo: Undo, lastResort?: () => void): void {
    this.#steps.push(lastResort ? { name, undo, lastResort } : { name, undo });
  }

  /** Undoes every step, newest first; a failing step is reported and the rest still run. Idempotent. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      for (let step = this.#steps.pop(); step !== undefined; step = this.#steps.pop()) {
        try {
          await step.undo();
        } catch (error) {
          console.error(`teardown: ${step.name}: ${error instanceof Error ? error.message : String(error)}`);
          step.lastResort?.();
        }
      }
    })();
    return this.#running;
  }
}
