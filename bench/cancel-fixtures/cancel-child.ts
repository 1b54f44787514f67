// The worker process of the cancellation benchmark (bench/cancel.ts),
// forked on the benchmark's store: a jobs app, client of the benchmark's,
// running the aborted-at handler with app.process. It reports `ready` with
// its role over the fork's IPC channel, and closes its app and exits when
// told `stop` (or when the benchmark goes away).

import { parseArgs } from 'node:util';
import { startJobs } from 'jobtree';
import handler from './aborted-at.js';

export interface CancelChildReady {
  kind: 'ready';
  role: 'owner' | 'client';
}

const { values } = parseArgs({ options: { path: { type: 'string' }, type: { type: 'string' } } });
const app = await startJobs({ path: values.path!, threads: 1, logLevel: 'warn' });
const stop = (): void => void app.close().then(() => process.exit(0));
process.on('message', (message) => message === 'stop' && stop());
process.on('disconnect', stop);
await app.process(values.type!, handler, { threads: 1, maxJobs: 4 });
process.send?.({ kind: 'ready', role: app.role } satisfies CancelChildReady);
