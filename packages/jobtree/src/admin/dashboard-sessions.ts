// Dashboard sign-in without the token in a URL. `jobtree dashboard --open`
// asks (with the token) for a code, and opens the browser on
// /dashboard/open?code=…: the opener's command line, which every user of the
// machine can read, then shows a code that is spent once exchanged and dead
// after CODE_TTL_MS, never the token. The endpoint trades the code for a
// session, kept in an HttpOnly, SameSite=Strict cookie, and the session
// stands for the token on the dashboard's own requests.
//
// Whoever reads the command line can still trade the code before the browser
// does. The browser then brings a spent code: that ends the session the code
// bought, so a taken code gives its taker a session only until the browser
// arrives, and the browser's user a sign-in that fails instead of silence.
//
// A session ends SESSION_TTL_MS after its sign-in, whatever its use: a
// cookie copied off a machine, or left in a browser nobody closes, stops
// standing for the token within a working day, and the cookie's Max-Age
// tells the browser to drop it then too.

import { createHash, randomBytes } from 'node:crypto';

/** How long a code can be exchanged: the time for a browser to start and follow it. */
export const CODE_TTL_MS = 60_000;
/** How long a session stands for the token after its sign-in. */
export const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Codes kept (unspent, or spent and not yet expired); the oldest goes first. */
const MAX_CODES = 16;
/** Sessions kept (each browser signed in holds one); the oldest goes first. */
const MAX_SESSIONS = 64;

/** Why {@link DashboardSessions.redeem} gave no session. */
export type RedeemRefusal = 'unknown' | 'spent';

interface IssuedCode {
  /** Epoch ms. */
  expires: number;
  /** The digest of the session the code was traded for, once spent. */
  session?: string;
}

export class DashboardSessions {
  /** Code digest -> the code's expiry and, once spent, its session. */
  readonly #codes = new Map<string, IssuedCode>();
  /** Session digest -> its expiry (epoch ms), oldest first. */
  readonly #sessions = new Map<string, number>();

  /** A fresh single-use code. */
  issueCode(now = Date.now()): { code: string; expiresInMs: number } {
    const code = randomBytes(32).toString('base64url');
    for (const [digest, issued] of this.#codes) if (issued.expires <= now) this.#codes.delete(digest);
    if (this.#codes.size >= MAX_CODES) this.#codes.delete(this.#codes.keys().next().value as string);
    this.#codes.set(digest(code), { expires: now + CODE_TTL_MS });
    return { code, expiresInMs: CODE_TTL_MS };
  }

  /**
   * Spends `code` for a new session id. A code unknown or expired gives
   * `unknown`; one already spent gives `spent`, and ends the session it
   * was traded for.
   */
  redeem(code: string, now = Date.now()): { session: string; expiresInMs: number } | { refused: RedeemRefusal } {
    const key = digest(code);
    const issued = this.#codes.get(key);
    if (issued === undefined || issued.expires <= now) {
      this.#codes.delete(key);
      return { refused: 'unknown' };
    }
    if (issued.session !== undefined) {
      this.#sessions.delete(issued.session);
      return { refused: 'spent' };
    }
    const session = randomBytes(32).toString('base64url');
    for (const [key, expires] of this.#sessions) if (expires <= now) this.#sessions.delete(key);
    if (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value as string);
    issued.session = digest(session);
    this.#sessions.set(issued.session, now + SESSION_TTL_MS);
    return { session, expiresInMs: SESSION_TTL_MS };
  }

  /** Whether `session` was handed out by {@link redeem}, has not expired, and was not pushed out since. */
  has(session: string, now = Date.now()): boolean {
    const key = digest(session);
    const expires = this.#sessions.get(key);
    if (expires === undefined) return false;
    if (expires > now) return true;
    this.#sessions.delete(key);
    return false;
  }
}

// Kept and compared as digests: a lookup's timing then says nothing about a secret.
function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}
