// Supervised actors on worker threads: a one_for_one supervisor restarts a
// counter after it is killed, even when it is stuck in a synchronous loop.
// Run: pnpm exec tsx examples/supervision-demo.ts

import { setTimeout as sleep } from 'node:timers/promises';
import { createActorSystem } from '@jobtree/actors';
import { actorStart, startSupervisor } from 'jobtree';
import counter, { type CounterMessage } from './actors/counter.js';

const system = createActorSystem({ threads: 2 });
system.events.on('thread_replaced', (event) => console.log('  thread replaced:', JSON.stringify(event)));

const supervisor = await startSupervisor(system, {
  strategy: 'one_for_one',
  intensity: 3,
  period: 10_000,
  children: [{ id: 'counter', start: actorStart(counter, { start: 100 }, { name: 'counter' }) }],
});
supervisor.events.on('child_restarted', (event) => console.log(`  supervisor restarted ${event.id}`));

const get = () => system.call<number, CounterMessage>('counter', { type: 'get' }, 1000);

console.log('== 1. a counter on a pooled worker thread');
system.cast<CounterMessage>('counter', { type: 'add', by: 5 });
console.log(`  counter ${system.whereis('counter')} = ${await get()}`);

console.log('== 2. kill it: abrupt and untrappable; the supervisor starts a new one');
const restarted = new Promise((resolve) => supervisor.events.once('child_restarted', resolve));
system.kill('counter');
await restarted;
console.log(`  counter ${system.whereis('counter')} = ${await get()} (state starts again from its args)`);

console.log('== 3. a handler stuck in a synchronous loop: its host thread is terminated and replaced');
const restartedAgain = new Promise((resolve) => supervisor.events.once('child_restarted', resolve));
const replaced = new Promise((resolve) => system.events.once('thread_replaced', resolve));
// A kill travels apart from messages and could overtake the spin: wait until the counter is looping.
const flag = new SharedArrayBuffer(4);
system.cast<CounterMessage>('counter', { type: 'spin', spinning: flag });
while (Atomics.load(new Int32Array(flag), 0) === 0) await sleep(5);
console.log('  the counter is looping; kill it');
system.kill('counter');
await Promise.all([restartedAgain, replaced]);
console.log(`  counter ${system.whereis('counter')} = ${await get()}`);

console.log('== 4. the tree');
for (const child of await supervisor.whichChildren()) console.log(`  ${child.id}: ${child.actor} (${child.type})`);

await supervisor.stop();
await system.shutdown();
console.log('stopped');
