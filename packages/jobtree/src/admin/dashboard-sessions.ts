// Dashboard sign-in without the token in a URL. `jobtree dashboard --open`
// asks (with the token) for a code, and opens the browser on
// /dashboard/open?code=…: the opener's command line, which every user of the
// machine can read, then shows a code that is spent once exchanged and dead
// after CODE_TTL_MS, never the token. The endpoint trades the code for a
// session, kept in an HttpOnly, SameSite=Strict cookie, and the session
// stands for the token on the dashboard's own requests.

import { createHash, randomBytes } from 'node:crypto';

/** How long a code can be exchanged: the time for a browser to start and follow it. */
export const CODE_TTL_MS = 60_000;
/** Unspent codes kept; the oldest goes first. */
const MAX_CODES = 16;
/** Sessions kept (each browser signed in holds one); the oldest goes first. */
const MAX_SESSIONS = 64;

export class DashboardSessions {
  /** Code digest -> when it expires (epoch ms). */
  readonly #codes = new Map<string, number>();
  /** Session digests, oldest first. */
  readonly #sessions = new Set<string>();

  /** A fresh single-use code. */
  issueCode(now = Date.now()): { code: string; expiresInMs: number } {
    const code = randomBytes(32).toString('base64url');
    for (const [digest, expires] of this.#codes) if (expires <= now) this.#codes.delete(digest);
    if (this.#codes.size >= MAX_CODES) this.#codes.delete(this.#codes.keys().next().value as string);
    this.#codes.set(digest(code), now + CODE_TTL_MS);
    return { code, expiresInMs: CODE_TTL_MS };
  }

  /** Spends `code` for a new session id; undefined when the code is unknown, spent or expired. */
  redeem(code: string, now = Date.now()): string | undefined {
    const key = digest(code);
    const expires = this.#codes.get(key);
    this.#codes.delete(key);
    if (expires === undefined || expires <= now) return undefined;
    const session = randomBytes(32).toString('base64url');
    if (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.values().next().value as string);
    this.#sessions.add(digest(session));
    return session;
  }

  /** Whether `session` was handed out by {@link redeem} (and not pushed out since). */
  has(session: string): boolean {
    return this.#sessions.has(digest(session));
  }
}

// Kept and compared as digests: a lookup's timing then says nothing about a secret.
function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}
