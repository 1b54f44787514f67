// Deploying on one machine: a web process enqueues jobs and answers when
// they are done, a worker process runs their handler, both on one data
// directory, with no server to install. This file is the web process; it
// starts the worker process itself so that the example runs in one command:
// `tsx examples/web-and-worker/web.ts`. In production each is started by
// your process manager (pm2, systemd, Kubernetes), in any order.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';

const path = mkdtempSync(join(tmpdir(), 'jobtree-web-and-worker-'));
const app = await startJobs({ path });
await app.setTypeTimeout('resize', 30);
console.log(`web ${process.pid} is the store's ${app.role}`);

const worker = fork(new URL('./worker.ts', import.meta.url), [path], { execArgv: ['--import=tsx'] });
await new Promise((resolve) => worker.once('message', resolve));

// POST /resize?id=cat.jpg&width=128 enqueues a job and answers with its result.
const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const id = url.searchParams.get('id') ?? 'image';
  await app.add('resize', id, { width: Number(url.searchParams.get('width') ?? 64) });
  const sub = await app.subscribe('resize', id);
  const done = await app.wait(sub, 'finished', 30_000);
  // The job's data stays its input; what the handler returned is its result.
  res.end(JSON.stringify(done === 'timeout' ? { timeout: true } : (await app.getJob('resize', id))?.result));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as { port: number };

for (const [id, width] of [['cat.jpg', 128], ['dog.png', 64]] as const) {
  const answer = await fetch(`http://127.0.0.1:${port}/resize?id=${id}&width=${width}`, { method: 'POST' });
  console.log(`${id}:`, await answer.text());
}

server.close();
worker.kill('SIGTERM');
await new Promise((resolve) => worker.once('exit', resolve));
await app.close();
rmSync(path, { recursive: true, force: true });
console.log('closed');
