// The worker process of the web-and-worker example: it opens the same data
// directory as the web process and runs the handler of `resize` jobs. Which
// process owns the store does not matter: the first to open it owns it and
// serves the other. `tsx examples/web-and-worker/worker.ts DIR`
import { startJobs } from 'jobtree';
import resize from '../handlers/resize.js';

const path = process.argv[2] ?? './.data/web-and-worker';
const app = await startJobs({ path });
await app.setTypeTimeout('resize', 30);
await app.process('resize', resize, { maxJobs: 4 });
console.log(`worker ${process.pid} is the store's ${app.role}`);
process.send?.('ready');
// Runs until told to stop (the web process, a process manager: SIGTERM).
process.once('SIGTERM', () => void app.close().then(() => console.log('worker closed')));
