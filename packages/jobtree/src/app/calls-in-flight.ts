// The app's calls that have not settled yet. When the app stops because its
// root supervisor died they reject at once with the stop's error, whatever
// the store does with them afterwards: an accept waiting for a job, or a
// subscribe waiting for a notifier, would otherwise wait for a tree that is
// gone.

export class CallsInFlight {
  readonly #rejects = new Set<(error: Error) => void>();

  /** `work`, settled as it settles unless `rejectAll` comes first. */
  track<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#rejects.add(reject);
      work.then(
        (value) => {
          this.#rejects.delete(reject);
          resolve(value);
        },
        (error: unknown) => {
          this.#rejects.delete(reject);
          reject(error);
        },
      );
    });
  }

  /** Rejects every tracked call with `error` (what their work does later is ignored). */
  rejectAll(error: Error): void {
    const rejects = [...this.#rejects];
    this.#rejects.clear();
    for (const reject of rejects) reject(error);
  }
}
