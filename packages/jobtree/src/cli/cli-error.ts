// Every failure the command reports is a CliError: a one-line message and
// the exit code it ends with (2 for bad usage, 1 for everything else).

/**
 * - `usage`: bad arguments or options (exit 2).
 * - `no_app`: the command needs a running app and none answers for the data directory (exit 1).
 * - `request_failed`: the app or the store refused the request (exit 1).
 * - `unreachable`: the app's endpoint does not answer (exit 1).
 * - `untrusted_record`: the token would go to an endpoint named by an admin.json that
 *   another user could have written (exit 1).
 */
export type CliErrorCode = 'usage' | 'no_app' | 'request_failed' | 'unreachable' | 'untrusted_record';

export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  get exitCode(): number {
    return this.code === 'usage' ? 2 : 1;
  }
}
