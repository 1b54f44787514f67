// A handler of the cancellation benchmark (bench/cancel.ts): writes
// `${dir}/${id}.running` once it runs, waits for its signal, then writes
// when the abort reached it (epoch ms with sub-millisecond precision,
// comparable across threads and processes) and its cause to `${dir}/${id}`.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineHandler } from '../../packages/jobtree/src/processors/index.js';

export default defineHandler<{ dir: string }>(import.meta.url, async (job, ctx) => {
  writeFileSync(join(job.data.dir, `${job.id}.running`), '');
  if (!ctx.signal.aborted) await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  const abortedAt = performance.timeOrigin + performance.now();
  const cause = String((ctx.signal.reason as { cause?: unknown }).cause);
  // Written whole, then renamed: the benchmark never reads half a file.
  const path = join(job.data.dir, job.id);
  writeFileSync(`${path}.tmp`, JSON.stringify({ abortedAt, cause }));
  renameSync(`${path}.tmp`, path);
});
