// A promise and the function that resolves it, for tests that hold a
// transaction or a worker at a point until the test lets it go (Node 20 has
// no Promise.withResolvers).

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}
