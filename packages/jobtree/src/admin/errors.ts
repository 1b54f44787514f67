// Every error of the admin endpoint is an AdminError with a stable `code`;
// the endpoint answers it as a JSON body with the matching HTTP status.

/**
 * - `bad_request`: a malformed body, parameter or JSON value (400).
 * - `unauthorized`: a mutating request without the app's token (401).
 * - `forbidden`: a request to a loopback endpoint naming another host (403): a web page
 *   that rebinds its own domain to 127.0.0.1 must not read the app; or a request a
 *   page of another site made (its browser's `Sec-Fetch-Site`), other than following a link.
 * - `not_found`: no such route, job, type or actor (404).
 * - `method_not_allowed`: the route exists, not with this method (405).
 * - `request_timeout`: a request whose headers or body did not arrive in time (408): a
 *   client that trickles its request cannot hold a socket for ever.
 * - `payload_too_large`: a request body over the limit (413).
 * - `unavailable`: the app is closing or the part asked about is not running (503).
 * - `internal`: an unexpected failure while answering (500); the app carries on.
 */
export type AdminErrorCode = 'bad_request' | 'unauthorized' | 'forbidden' | 'not_found' | 'method_not_allowed' | 'request_timeout' | 'payload_too_large' | 'unavailable' | 'internal';

const STATUS: Record<AdminErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  unavailable: 503,
  internal: 500,
};

export class AdminError extends Error {
  override readonly name = 'AdminError';
  readonly code: AdminErrorCode;
  /** For `method_not_allowed`: the methods the path answers, sent as the `Allow` header. */
  readonly allow: readonly string[] | undefined;

  constructor(code: AdminErrorCode, message: string, options?: { cause?: unknown; allow?: readonly string[] }) {
    super(message, options);
    this.code = code;
    this.allow = options?.allow;
  }

  /** The HTTP status this error is answered with. */
  get status(): number {
    return STATUS[this.code];
  }
}
