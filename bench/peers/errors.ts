// The peer benchmark's failures, each with a stable code, so that a run that
// breaks says which kind of thing broke (and CI logs can be grepped for it).

export type PeerBenchErrorCode =
  /** A system ran a job twice, never, or reported a completion it did not run. */
  | 'not_exactly_once'
  /** apt-get or npm could not install what the benchmark needs. */
  | 'install_failed'
  /** Redis or Postgres did not start, or exited while the benchmark ran. */
  | 'server_failed'
  /** A run did not finish within its deadline. */
  | 'run_timeout'
  /** A system's own process failed (its error is printed above). */
  | 'run_failed';

export class PeerBenchError extends Error {
  override readonly name = 'PeerBenchError';
  readonly code: PeerBenchErrorCode;

  constructor(code: PeerBenchErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
