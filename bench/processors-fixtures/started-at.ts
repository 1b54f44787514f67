// Resolves with when it started (epoch ms with sub-millisecond precision,
// comparable across threads).
import { defineHandler } from '../../packages/jobtree/src/processors/index.js';

export default defineHandler(import.meta.url, () => ({ startedAt: performance.timeOrigin + performance.now() }));
