// The system's directory of registered names, kept by the main thread, which
// owns them: which actor holds each name (the main thread's table, of which
// every host thread keeps a replica, told of each change), the names promised
// to spawns under way, and the names of killed actors whose thread has not
// confirmed the death yet. Such a name is not free until then: a spawn or a
// registration that takes it waits, so that the old holder runs no handler
// once the new one has started.

import { ActorError } from './errors.js';
import { Kind } from './envelope.js';
import type { ActorId } from './interfaces.js';

/** How a change of the table reaches every host thread's replica. */
export type PublishName = (kind: typeof Kind.nameSet | typeof Kind.nameCleared, id: ActorId, name: string) => void;

export class NameDirectory {
  readonly #table: Map<string, ActorId>;
  readonly #publish: PublishName;
  /** Names promised to spawns under way. */
  readonly #reserved = new Set<string>();
  /** Names of killed actors whose thread has not confirmed the death yet -> that actor. */
  readonly #killedHolders = new Map<string, ActorId>();
  readonly #waiters = new Map<string, (() => void)[]>();

  /**
   * @param table the main thread's name table (the one its ActorHost reads)
   * @param publish tells every host thread of a change
   */
  constructor(table: Map<string, ActorId>, publish: PublishName) {
    this.#table = table;
    this.#publish = publish;
  }

  whereis(name: string): ActorId | undefined {
    return this.#table.get(name);
  }

  /** Throws `name_taken` when an actor holds `name` or a spawn under way was promised it. */
  checkFree(name: string): void {
    const holder = this.#table.get(name);
    if (holder !== undefined || this.#reserved.has(name)) {
      throw new ActorError('name_taken', `the name ${name} belongs to ${holder ?? 'an actor being spawned'}`);
    }
  }

  /** Promises a free `name` (else `name_taken`) to a spawn under way, until `unreserve`. */
  reserve(name: string): void {
    this.checkFree(name);
    this.#reserved.add(name);
  }

  unreserve(name: string): void {
    this.#reserved.delete(name);
  }

  /** Another actor holds `name`, or a spawn under way was promised it. */
  takenFor(name: string, id: ActorId): boolean {
    const holder = this.#table.get(name);
    return (holder !== undefined && holder !== id) || this.#reserved.has(name);
  }

  /** `id` holds `name` from now on, on every thread. */
  set(name: string, id: ActorId): void {
    this.#table.set(name, id);
    this.#publish(Kind.nameSet, id, name);
  }

  /** `id` ended: its `name`, if it still holds it, is free on every thread. */
  cleared(name: string, id: ActorId): void {
    if (this.#table.get(name) !== id) return;
    this.#table.delete(name);
    this.#publish(Kind.nameCleared, id, name);
  }

  /** `id`, which held `name`, was declared dead: the name waits for its thread's confirmation (`confirmDead`). */
  heldByKilled(name: string, id: ActorId): void {
    this.#killedHolders.set(name, id);
  }

  /** A killed actor whose thread has not confirmed the death yet held `name`. */
  awaitsConfirmation(name: string): boolean {
    return this.#killedHolders.has(name);
  }

  /** Resolves once no killed actor awaiting its thread's confirmation holds `name`. */
  async released(name: string): Promise<void> {
    while (this.#killedHolders.has(name)) {
      await new Promise<void>((resolve) => {
        const waiters = this.#waiters.get(name);
        if (waiters === undefined) this.#waiters.set(name, [resolve]);
        else waiters.push(resolve);
      });
    }
  }

  /** The thread of killed actor `id` confirmed its death (or is gone): the names it held are released. */
  confirmDead(id: ActorId): void {
    for (const [name, holder] of this.#killedHolders) {
      if (holder !== id) continue;
      this.#killedHolders.delete(name);
      const waiters = this.#waiters.get(name);
      this.#waiters.delete(name);
      if (waiters !== undefined) for (const wake of waiters) wake();
    }
  }

  /** The system has shut down: nothing waits for a name any more. */
  close(): void {
    this.#killedHolders.clear();
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
    this.#waiters.clear();
  }
}
