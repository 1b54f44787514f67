// Waiting for what an actor's code returned (its init, a handler, its
// terminate) when that is a promise or any other thenable, as `await` would,
// but reading its `then` once and at a point the cell chooses: inside the try
// around the actor's call, so that a `then` getter or a `then` that throws is
// that actor's failure, like a throw from its code, and never the thread's.

export type Then = PromiseLike<unknown>['then'];

const PROMISE_THEN: Then = Promise.prototype.then;

/**
 * The `then` of `value` if it is a thenable to wait for, else `undefined`.
 * Reads it once (a getter with side effects runs once, as when a promise is
 * resolved with `value`); throws what the getter throws.
 */
export function thenOf(value: unknown): Then | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  const then: unknown = (value as { then?: unknown }).then;
  return typeof then === 'function' ? (then as Then) : undefined;
}

/**
 * Calls `settled` or `failed`, once and never synchronously, when `value`
 * settles, through the `then` read from it already (Promise.resolve(value)
 * would read it again). A native promise's own `then` is called directly,
 * with no promise more (the hot path of an async handler); any other goes
 * through a new promise's resolve, which treats what the thenable does as a
 * promise would: a thenable it resolves with is waited for, a second call
 * is ignored, a throw from its `then` rejects. Throws synchronously only
 * where the native `then` does (on an object that is no promise, say).
 */
export function whenSettled(value: unknown, then: Then, settled: (value: unknown) => void, failed: (error: unknown) => void): void {
  if (then === PROMISE_THEN) then.call(value, settled, failed);
  else new Promise<unknown>((resolve, reject) => then.call(value, resolve, reject)).then(settled, failed);
}
