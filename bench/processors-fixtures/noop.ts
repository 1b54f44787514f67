// A handler that does nothing: the scheduler's own cost per job.
import { defineHandler } from '../../packages/jobtree/src/processors/index.js';

export default defineHandler(import.meta.url, () => null);
