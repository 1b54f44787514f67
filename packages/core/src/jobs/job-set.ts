// A set of jobs (type and id), for the write batcher's jobs in flight (see
// write-batcher.ts).

/** Job ids by type: no key string is built per call (a type and id joined had to be flattened and hashed anew). */
export class JobSet {
  readonly #scopes = new Map<string, Set<string>>();
  /** The last type looked up and its ids: a batch's calls are mostly of one type, so most need no map lookup. */
  #lastScope: string | undefined;
  #lastIds: Set<string> | undefined;

  /** Adds the job; false when it was there already. */
  add(scope: string, id: string): boolean {
    let ids = this.#ids(scope);
    if (ids === undefined) {
      ids = new Set();
      this.#scopes.set(scope, ids);
      this.#lastScope = scope;
      this.#lastIds = ids;
    } else if (ids.has(id)) {
      return false;
    }
    ids.add(id);
    return true;
  }

  delete(scope: string, id: string): void {
    const ids = this.#ids(scope);
    if (ids === undefined) return;
    ids.delete(id);
    if (ids.size === 0) {
      this.#scopes.delete(scope);
      if (this.#lastIds === ids) {
        this.#lastScope = undefined;
        this.#lastIds = undefined;
      }
    }
  }

  #ids(scope: string): Set<string> | undefined {
    if (scope === this.#lastScope) return this.#lastIds;
    const ids = this.#scopes.get(scope);
    if (ids !== undefined) {
      this.#lastScope = scope;
      this.#lastIds = ids;
    }
    return ids;
  }
}
