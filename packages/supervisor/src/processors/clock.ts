// The scheduler's one source of time. Tests inject their own to skip a
// backoff without waiting for it.

import type { Clock } from './interfaces.js';

export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (callback: () => void, ms: number): unknown => setTimeout(callback, ms),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as NodeJS.Timeout),
});
