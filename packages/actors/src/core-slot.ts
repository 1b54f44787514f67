// The core behind the bridge can be replaced (the jobs application restarts
// its `core` child): every thread's bridge exposes one forwarding object,
// set up once, whose calls go to whatever core is current when they arrive.
// While there is none, a call waits for the next one, within a bound.

import { ActorError } from './errors.js';

interface Waiter {
  resolve: (core: object) => void;
  reject: (error: ActorError) => void;
  timer: NodeJS.Timeout;
}

/** The main thread's current core object, and the bridge calls waiting for one. */
export class CoreSlot {
  #core: object | undefined;
  #waiters = new Set<Waiter>();
  readonly #waitMs: number;

  constructor(core: object | undefined, waitMs: number) {
    this.#core = core;
    this.#waitMs = waitMs;
  }

  get current(): object | undefined {
    return this.#core;
  }

  set(core: object | undefined): void {
    this.#core = core;
    if (core === undefined) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.resolve(core);
    }
  }

  /** The current core, or the next one set within the wait bound. */
  get(): object | Promise<object> {
    if (this.#core !== undefined) return this.#core;
    return new Promise<object>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(new ActorError('no_core', `no core was set within ${this.#waitMs} ms (setCore)`));
        }, this.#waitMs),
      };
      // A bridge call waiting for a core must not keep the process alive by itself.
      waiter.timer.unref();
      this.#waiters.add(waiter);
    });
  }

  /** The system is going away: waiting calls fail now. */
  close(): void {
    this.#core = undefined;
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new ActorError('no_core', 'the actor system shut down before a core was set'));
    }
    this.#waiters.clear();
  }

  /**
   * What the bridge exposes: a stand-in for the core at any property path.
   * A method call (comlink APPLY) finds the method on the core current at
   * that moment and calls it with its own parent as `this`; a property read
   * (comlink GET) resolves through `then` to the current value; a write sets
   * it on the current core.
   */
  forwarder(): object {
    return this.#at([]);
  }

  #at(path: readonly PropertyKey[]): object {
    const slot = this;
    // A function target, so that the proxy can be applied.
    return new Proxy(function forwarded(): void {}, {
      get(target, key) {
        // comlink runs a method as `value.apply(parent, args)`: that must be the function's own apply,
        // which lands in the apply trap below. (So a core method named apply, call or bind is out of reach.)
        if (key === 'apply' || key === 'call' || key === 'bind') return Reflect.get(target, key);
        if (key === 'then') {
          // Only a path below the root is read as a value: the root itself is no thenable.
          if (path.length === 0) return undefined;
          return (resolve: (value: unknown) => void, reject: (error: unknown) => void) => {
            Promise.resolve(slot.get())
              .then((core) => walk(core, path))
              .then(resolve, reject);
          };
        }
        return slot.#at([...path, key]);
      },
      set(_target, key, value) {
        const core = slot.#core;
        if (core === undefined) throw new ActorError('no_core', 'no core is set (setCore)');
        (walk(core, path) as Record<PropertyKey, unknown>)[key] = value;
        return true;
      },
      apply(_target, _this, args: unknown[]) {
        const call = (core: object): unknown => {
          const parent = walk(core, path.slice(0, -1)) as Record<PropertyKey, unknown>;
          const method = parent[path[path.length - 1] as PropertyKey];
          if (typeof method !== 'function') throw new ActorError('bad_argument', `the core has no method ${path.map(String).join('.')}`);
          return method.apply(parent, args);
        };
        const core = slot.#core;
        if (core !== undefined) return call(core);
        return Promise.resolve(slot.get()).then(call);
      },
    });
  }
}

function walk(root: object, path: readonly PropertyKey[]): unknown {
  let value: unknown = root;
  for (const key of path) value = (value as Record<PropertyKey, unknown>)[key];
  return value;
}
