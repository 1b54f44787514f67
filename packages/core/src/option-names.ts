// The names one options object of the public API accepts. A key that is
// none of them is a mistake (a typo, an option of another call, a feature
// this call does not have) that would otherwise be silently ignored: the job
// would run now instead of later, outside the caller's transaction, with the
// default concurrency. The message names the key and, when it can, what was
// meant.

import { JobsError } from './errors.js';

/**
 * The known option names of one call, with advice for names people try
 * instead. Make one per options object, once (module level): checking is a
 * loop over the given keys.
 *
 * @example
 * const ADD_OPTIONS = new OptionNames('add', ['scheduledTime', 'priority'], { delay: 'scheduledTime' });
 * ADD_OPTIONS.check(options); // JobsError invalid_option: add has no option "delay" (did you mean scheduledTime?)
 */
export class OptionNames {
  readonly #what: string;
  readonly #names: ReadonlySet<string>;
  readonly #advice: ReadonlyMap<string, string>;

  /**
   * @param what the call or object, as messages name it (`add`, `a job of addMany`)
   * @param names the keys it accepts
   * @param advice for a key people use by mistake: one of `names` (the
   *   message asks "did you mean …?"), or a sentence saying where that
   *   option belongs
   */
  constructor(what: string, names: readonly string[], advice: Readonly<Record<string, string>> = {}) {
    this.#what = what;
    this.#names = new Set(names);
    this.#advice = new Map(Object.entries(advice));
  }

  /** The call or object, as messages name it. */
  get what(): string {
    return this.#what;
  }

  /**
   * What is wrong with the first key of `options` that is none of the names,
   * or `undefined` when every key is known. A key whose value is `undefined`
   * counts as absent, as an omitted option does everywhere else.
   */
  unknownIn(options: object): string | undefined {
    for (const key in options) {
      if (this.#names.has(key) || (options as Record<string, unknown>)[key] === undefined) continue;
      return this.#message(key);
    }
    return undefined;
  }

  /** Throws `JobsError` `invalid_option` for an unknown key (see {@link unknownIn}). */
  check(options: object): void {
    const message = this.unknownIn(options);
    if (message !== undefined) throw new JobsError('invalid_option', message);
  }

  #message(key: string): string {
    const given = `${this.#what} has no option ${JSON.stringify(key)}`;
    const advice = this.#advice.get(key) ?? closestName(key, this.#names);
    if (advice !== undefined && this.#names.has(advice)) return `${given} (did you mean ${advice}?)`;
    if (advice !== undefined) return `${given}: ${advice}`;
    return this.#names.size === 0 ? `${given} (it takes none)` : `${given} (its options: ${[...this.#names].join(', ')})`;
  }
}

/**
 * The known name nearest to `key` when it is near enough to be a typo:
 * case aside, at most a third of its letters wrong (and at least one may be).
 */
function closestName(key: string, names: ReadonlySet<string>): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    const distance = editDistance(lower, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  if (best === undefined) return undefined;
  return bestDistance <= Math.max(1, Math.floor(Math.max(key.length, best.length) / 3)) ? best : undefined;
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min(substitution, (previous[j] as number) + 1, (row[j - 1] as number) + 1));
    }
    previous = row;
  }
  return previous[b.length] as number;
}
