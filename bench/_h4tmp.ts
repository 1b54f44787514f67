import { MessageChannel, Worker } from 'node:worker_threads';
import { createActorSystem } from '@jobtree/actors';
import benchActor from '../test/actors/fixtures/bench-actor.js';
const RAW = `
const { parentPort } = require('node:worker_threads');
parentPort.once('message', ({ port, role }) => {
  if (role === 'peer') { let got = 0, want = 0; port.on('message', (m) => { if (m.expect !== undefined) { got = 0; want = m.expect; port.postMessage('ready'); } else { got += m.length; if (got === want) port.postMessage('done'); } }); return; }
  parentPort.on('message', ({ n }) => { port.onmessage = (e) => { if (e.data !== 'ready') return; const begin = performance.now();
        port.onmessage = () => parentPort.postMessage(performance.now() - begin);
        for (let i = 0; i < n; i += 100) { const items = []; for (let j = i; j < Math.min(n, i + 100); j++) items.push(j); port.postMessage(items); } };
      port.postMessage({ expect: n }); });
});`;
const d = new Worker(RAW, { eval: true }); const p = new Worker(RAW, { eval: true });
const { port1, port2 } = new MessageChannel();
p.postMessage({ port: port2, role: 'peer' }, [port2]); d.postMessage({ port: port1, role: 'driver' }, [port1]);
const raw = (n: number) => new Promise<number>((r) => { d.once('message', r); d.postMessage({ n }); });
const system = createActorSystem({ threads: 2 });
const a = await system.spawn(benchActor, undefined);
let b = await system.spawn(benchActor, undefined);
while (system.threadOf(b) === system.threadOf(a)) b = await system.spawn(benchActor, undefined);
const N = 200_000;
for (let i = 0; i < 10; i++) {
  const o = await system.call<number>(a, { op: "castLoop", to: b.id, n: N }, 60000);
  const r = await raw(N);
  console.log("ours", (N / o / 1000).toFixed(2), 'raw', (N / r / 1000).toFixed(2), 'ratio', (r / o).toFixed(2));
}
await system.shutdown(); await d.terminate(); await p.terminate();
