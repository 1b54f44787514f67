/**
 * setTimeout's largest delay, 2^31 - 1 ms (about 24.8 days): a longer one
 * fires at once instead, so timeouts are checked against it or capped at it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
