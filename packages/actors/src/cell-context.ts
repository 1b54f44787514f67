// `ctx`, what an actor's handlers see: every operation acts as that actor,
// through its cell and the runtime of its thread. Once the actor is dead its
// context does nothing (a call never settles), as nothing of a dead process
// runs on in Erlang.

import type { CellHost, HostedCell } from './cell-host.js';
import { Kind } from './envelope.js';
import { ActorError } from './errors.js';
import type { ActorContext, ActorDefinition, ActorId, ActorRef, ExitReason, MonitorRef, Remote, SpawnOptions } from './interfaces.js';

/** What a context needs of its cell (an ActorCell; named here so that the two modules do not import each other). */
export interface ContextCell extends HostedCell {
  readonly host: CellHost;
  readonly dead: boolean;
  /** Actors linked to this one. */
  readonly links: Set<ActorId>;
  /** Monitors this actor holds (see ActorCell.monitors). */
  readonly monitors: Map<MonitorRef, ActorId>;
  trapping: boolean;
  receive(predicate: (msg: unknown) => boolean, timeoutMs: number): Promise<unknown>;
  sendAfter(ms: number, tag: string): () => void;
  stop(reason: ExitReason): void;
}

export class CellContext implements ActorContext<unknown> {
  readonly #cell: ContextCell;
  readonly self: ActorRef<unknown>;

  constructor(cell: ContextCell) {
    this.#cell = cell;
    this.self = Object.freeze({ id: cell.id });
  }

  get name(): string | undefined {
    return this.#cell.name;
  }

  spawn<M, A>(definition: ActorDefinition<M, A>, args: A, options?: SpawnOptions): Promise<ActorRef<M>> {
    return this.#cell.host.spawn(this.#cell, definition as ActorDefinition<unknown, unknown>, args, options) as Promise<ActorRef<M>>;
  }

  cast<M>(to: ActorRef<M> | string, msg: M): void {
    if (!this.#cell.dead) this.#cell.host.cast(this.#cell.id, to, msg);
  }

  call<R = unknown, M = unknown>(to: ActorRef<M> | string, msg: M, timeoutMs?: number): Promise<R> {
    if (this.#cell.dead) return new Promise<never>(() => {});
    return this.#cell.host.call(this.#cell, this.#cell.id, to, msg, timeoutMs) as Promise<R>;
  }

  exit(target: ActorRef | ActorId, reason: ExitReason | 'kill'): void {
    if (!this.#cell.dead) this.#cell.host.exit(this.#cell.id, target, reason);
  }

  kill(target: ActorRef | ActorId | string): void {
    if (!this.#cell.dead) this.#cell.host.kill(target);
  }

  whereis(name: string): ActorId | undefined {
    return this.#cell.host.whereis(name);
  }

  link(target: ActorRef | ActorId): void {
    const cell = this.#cell;
    const id = cell.host.resolve(target);
    if (cell.dead || id === undefined || id === cell.id) return;
    cell.links.add(id);
    cell.host.send(Kind.link, id, cell.id, 0, null);
  }

  unlink(target: ActorRef | ActorId): void {
    const cell = this.#cell;
    const id = cell.host.resolve(target);
    if (cell.dead || id === undefined || !cell.links.delete(id)) return;
    cell.host.send(Kind.unlink, id, cell.id, 0, null);
  }

  monitor(target: ActorRef | ActorId): MonitorRef {
    const cell = this.#cell;
    const ref = cell.host.newMonitorRef();
    if (cell.dead) return ref;
    const id = cell.host.resolve(target);
    if (id === undefined) {
      cell.monitors.set(ref, '');
      cell.host.send(Kind.down, cell.id, typeof target === 'string' ? target : target.id, ref, 'noproc');
      return ref;
    }
    cell.monitors.set(ref, id);
    cell.host.send(Kind.monitor, id, cell.id, ref, null);
    return ref;
  }

  demonitor(ref: MonitorRef): void {
    const cell = this.#cell;
    const target = cell.monitors.get(ref);
    if (target === undefined) return;
    cell.monitors.delete(ref);
    if (target !== '' && !cell.dead) cell.host.send(Kind.demonitor, target, cell.id, ref, null);
  }

  trapExit(on: boolean): void {
    this.#cell.trapping = on;
  }

  register(name: string): void {
    if (!this.#cell.dead) this.#cell.host.register(this.#cell, name);
  }

  receive<T>(predicate: (msg: unknown) => boolean, timeoutMs: number): Promise<T | undefined> {
    if (typeof predicate !== 'function') throw new ActorError('bad_argument', 'receive needs a predicate function');
    return this.#cell.receive(predicate, timeoutMs) as Promise<T | undefined>;
  }

  sendAfter(ms: number, tag: string): () => void {
    return this.#cell.sendAfter(ms, tag);
  }

  stop(reason: ExitReason = 'normal'): void {
    this.#cell.stop(reason);
  }

  core<T>(): Remote<T> {
    return this.#cell.host.core<T>();
  }
}
