// A no-op job handler in plain JavaScript.
import { defineHandler } from 'jobtree/handler';

export default defineHandler(import.meta.url, async () => null);
