// The handler of the quick start (examples/quick-start.ts): `app.process`
// runs this module's default export for each job of its type, in a pool of
// worker threads, and stores what it returns as the job's result.
import { defineHandler } from 'jobtree/handler';

export default defineHandler<{ width: number }, { width: number; url: string }>(import.meta.url, async (job, ctx) => {
  await ctx.update({ width: job.data.width }); // progress: a live job is never re-enqueued
  if (ctx.signal.aborted) throw ctx.signal.reason; // cancelled (removed), rotated out or shutting down
  return { width: job.data.width, url: `https://cdn.example/${job.id}?w=${job.data.width}` };
});
