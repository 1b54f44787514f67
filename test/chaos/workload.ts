// The load a chaos run puts on a jobs app, each part recording what it does
// in the history: an adder (adds, and now and then removes), main-thread
// workers that accept, update and finish like an in-process worker pool and
// can be made to crash while holding a job, and subscribers that follow jobs
// to their end.

import { type Job, JobsError } from '@jobtree/core';
import type { JobsApp, Subscription } from 'jobtree';
import type { HistoryLog } from './history.js';
import type { Prng } from './prng.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function describeError(error: unknown): string {
  if (error instanceof Error) return `${(error as { code?: unknown }).code ?? error.name}: ${error.message}`;
  return String(error);
}

/** Adds jobs `${prefix}${n}` of the given types, one every `everyMs`, and removes a few of them. */
export class Adder {
  readonly added: { type: string; id: string }[] = [];
  #running = true;
  #done: Promise<void> | undefined;
  #count = 0;

  constructor(
    readonly app: JobsApp,
    readonly log: HistoryLog,
    readonly prng: Prng,
    readonly options: { types: readonly string[]; prefix: string; everyMs: number; max: number; removeChance: number; onAdded?: (type: string, id: string) => void },
  ) {}

  start(): void {
    this.#done = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#done;
  }

  get count(): number {
    return this.#count;
  }

  async #run(): Promise<void> {
    const { types, prefix, everyMs, max, removeChance, onAdded } = this.options;
    while (this.#running && this.#count < max) {
      const type = this.prng.pick(types);
      const id = `${prefix}${this.#count++}`;
      const priority = this.prng.chance(0.2) ? this.prng.between(1, 3) : 0;
      this.log.record({ op: 'add', phase: 'invoke', type, id, by: 'adder' });
      try {
        await this.app.add(type, id, { n: this.#count }, { priority });
        this.log.record({ op: 'add', phase: 'ok', type, id, by: 'adder' });
        this.added.push({ type, id });
        onAdded?.(type, id);
      } catch (error) {
        this.log.record({ op: 'add', phase: 'fail', type, id, by: 'adder', error: describeError(error) });
      }
      if (this.added.length > 0 && this.prng.chance(removeChance)) {
        const victim = this.prng.pick(this.added);
        this.log.record({ op: 'remove', phase: 'invoke', type: victim.type, id: victim.id, by: 'adder' });
        try {
          const removed = await this.app.remove(victim.type, victim.id);
          this.log.record({ op: 'remove', phase: 'ok', type: victim.type, id: victim.id, by: 'adder', state: removed ? 'removed' : 'absent' });
        } catch (error) {
          this.log.record({ op: 'remove', phase: 'fail', type: victim.type, id: victim.id, by: 'adder', error: describeError(error) });
        }
      }
      await sleep(everyMs);
    }
  }
}

/**
 * A worker on the main thread: accept, a few updates, finish. `crash()`
 * makes it stop dead, as a process that crashed would: whatever it held
 * stays running in the store until the activity monitor re-enqueues it, and
 * the answer of a call in flight is never recorded.
 */
export class MainWorker {
  readonly by: string;
  #alive = true;
  #done: Promise<void>;

  constructor(
    readonly app: JobsApp,
    readonly log: HistoryLog,
    readonly prng: Prng,
    readonly options: { types: readonly string[]; name: string; maxUpdates: number; maxStepMs: number },
  ) {
    this.by = options.name;
    this.#done = this.#run();
  }

  get alive(): boolean {
    return this.#alive;
  }

  crash(): void {
    this.#alive = false;
  }

  async stop(): Promise<void> {
    this.#alive = false;
    await this.#done;
  }

  async #run(): Promise<void> {
    while (this.#alive) {
      let job: Job | undefined;
      try {
        job = await this.app.accept(this.prng.pick(this.options.types), { timeout: 200 });
      } catch (error) {
        if (error instanceof JobsError && error.code === 'closed') return;
        await sleep(50);
        continue;
      }
      if (!this.#alive) return; // crashed while accepting: the job, if any, is left behind
      if (job === undefined) continue;
      this.log.record({ op: 'accept', phase: 'ok', type: job.type, id: job.id, lock: job.lock, by: this.by });
      await this.#work(job);
    }
  }

  async #work(accepted: Job): Promise<void> {
    let job = accepted;
    const base = { type: job.type, id: job.id, lock: job.lock, by: this.by };
    let updates = this.prng.int(this.options.maxUpdates + 1);
    for (;;) {
      await sleep(this.prng.int(this.options.maxStepMs + 1));
      if (!this.#alive) return;
      const op = updates > 0 ? 'update' : 'finish';
      this.log.record({ op, phase: 'invoke', ...base });
      try {
        if (op === 'update') {
          updates -= 1;
          job = await this.app.update(job, { progress: updates, by: this.by });
          if (!this.#alive) return;
          this.log.record({ op, phase: 'ok', ...base });
          continue;
        }
        const outcome = await this.app.finish(job, { token: job.lock, by: this.by });
        if (!this.#alive) return;
        this.log.record({ op, phase: 'ok', state: outcome, ...base });
        return;
      } catch (error) {
        if (!this.#alive) return;
        const halted = error instanceof JobsError && error.code === 'halt';
        this.log.record({ op, phase: halted ? 'halt' : 'fail', ...base, ...(halted ? {} : { error: describeError(error) }) });
        return; // a failed call drops the job: the activity monitor gives it back
      }
    }
  }
}

/** Follows jobs with subscriptions until each ends, recording every event. */
export class Subscribers {
  #next: number;
  readonly #open = new Map<number, Promise<void>>();
  #frozen = false;

  constructor(
    readonly app: JobsApp,
    readonly log: HistoryLog,
    firstNumber = 1,
  ) {
    this.#next = firstNumber;
  }

  /** Subscriptions not ended yet. */
  get open(): number {
    return this.#open.size;
  }

  follow(type: string, id: string): void {
    const sub = this.#next++;
    const following = this.#follow(sub, type, id).finally(() => this.#open.delete(sub));
    this.#open.set(sub, following);
  }

  /**
   * Records nothing more: called before the app closes, which ends every
   * subscription, so that one still open is seen as the hang it is.
   */
  freeze(): void {
    this.#frozen = true;
  }

  /** Resolves when every subscription ended, or after `ms`. */
  async settle(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.#open.size > 0 && Date.now() < deadline) {
      await Promise.race([Promise.all(this.#open.values()), sleep(Math.min(250, deadline - Date.now()))]);
    }
  }

  async #follow(sub: number, type: string, id: string): Promise<void> {
    const log = { record: (entry: Parameters<HistoryLog['record']>[0]) => (this.#frozen ? undefined : this.log.record(entry)) };
    let subscription: Subscription;
    try {
      subscription = await this.app.subscribe(type, id);
    } catch (error) {
      log.record({ op: 'subscribe', phase: 'fail', type, id, sub, by: 'subscriber', error: describeError(error) });
      return;
    }
    log.record({ op: 'subscribe', phase: 'ok', type, id, sub, by: 'subscriber', state: subscription.state });
    let last: string = subscription.state;
    try {
      for await (const event of subscription) {
        last = event.state;
        log.record({ op: 'event', type, id, sub, by: 'subscriber', state: event.state });
      }
      if (last === 'finished' || last === 'not_found') log.record({ op: 'sub_end', phase: 'ok', type, id, sub, by: 'subscriber', state: last });
      else log.record({ op: 'sub_end', phase: 'fail', type, id, sub, by: 'subscriber', error: `iteration ended at ${last}` });
    } catch (error) {
      log.record({ op: 'sub_end', phase: 'fail', type, id, sub, by: 'subscriber', error: describeError(error) });
    }
  }
}
