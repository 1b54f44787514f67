// An error a handler throws to say that another attempt would fail the same
// way (bad input, a permission refused): its job ends `failed` at once,
// whatever attempts are left. Errors cross from the handler's thread as
// plain { name, message }, so the mark travels as a field of its own
// (`retryable: false`, kept by the lane's serialization) rather than by
// class, which a subclass's own name would hide.

/** Thrown by a handler (or a subclass of it): the job is not retried, it ends `failed` with this error. */
export class NonRetryableError extends Error {
  override name = 'NonRetryableError';
  /** The mark the scheduler reads once the error has crossed from the handler's thread. */
  readonly retryable = false as const;
}
