import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startScheduler } from '../../packages/supervisor/src/processors/index.js';
import { JobtreeProcessorsSystem } from './systems/jobtree.js';
const scratch = await mkdtemp(join(tmpdir(), 'b-try-'));
const system = new JobtreeProcessorsSystem(scratch, async (jobs, type, handler, maxJobs) => {
  const s = await startScheduler({ jobs, type, handler, maxJobs });
  return { onFinished: (l) => { s.events.on('job:finished', (e) => { if (e.state === 'finished') l(e.id); }); }, stop: () => s.stop() };
});
console.log(await system.threadedDrain(2000, 8));
console.log(await system.threadedDrain(5000, 8));
