// A continuous job that runs until its signal aborts.
import { defineHandler } from '../../packages/jobtree/src/processors/index.js';

export default defineHandler(import.meta.url, async (_job, ctx) => {
  await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
});
