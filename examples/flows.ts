// The README's flows example: a report waits for its parts (one of which
// waits for its own), then its handler reads what they returned; a flow
// whose part fails fails its parent, naming the part. A flow subscription
// follows every job of q2's tree.
// `pnpm exec tsx examples/flows.ts [--path DIR]`
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobs } from 'jobtree';

const at = process.argv.indexOf('--path');
const path = at >= 0 ? (process.argv[at + 1] as string) : mkdtempSync(join(tmpdir(), 'jobtree-flows-'));

const app = await startJobs({ path, logLevel: 'silent' });
await app.setTypeTimeout('report', 30);
await app.setTypeTimeout('part', 30);
await app.addFlow({
  type: 'report',
  id: 'q2',
  data: { title: 'Q2' },
  children: [
    { type: 'part', id: 'q2-north', data: { region: 'north' } },
    // A part with parts of its own: it waits for them, and q2 waits for it.
    { type: 'report', id: 'q2-south', data: { title: 'south' }, children: [{ type: 'part', id: 'q2-south-coast', data: { region: 'coast' } }] },
  ],
});
console.log('q2 is', await app.getJobState('report', 'q2')); // waiting: its parts run first (no handler yet)
// Every job of the tree on one subscription, each event naming the job and its parent; it ends with q2's end.
const q2 = await app.subscribeFlow('report', 'q2');

// The handlers start once the subscription is there, so that it sees every job of q2 run.
await app.process('part', async (job) => {
  const { region } = job.data as { region: string };
  if (region === 'atlantis') throw new Error('no such region');
  return { region, sales: region.length * 100 };
}, { attempts: 1 });
await app.process('report', async (job, ctx) => {
  const parts = await ctx.childResults(); // each child's state, outcome, result or error
  // A part returned its sales; a sub-report, its total.
  const total = parts.reduce((sum, part) => {
    const figures = part.result as { sales?: number; total?: number };
    return sum + (figures.sales ?? figures.total ?? 0);
  }, 0);
  return { title: (job.data as { title: string }).title, total };
});
const finished: string[] = [];
let last = '';
for await (const event of q2) {
  if (event.state === 'finished') finished.push(`${event.id} (under ${event.parent?.id ?? 'nothing'})`);
  last = event.id;
}
console.log('q2 flow ended:', finished.sort().join(', '), '- last:', last);
console.log('q2 result:', (await app.getJob('report', 'q2'))?.result);
const tree = await app.getFlow('report', 'q2');
console.log('q2 flow:', tree?.children.map((child) => `${child.id} ${child.outcome} (${child.children.length} children)`).join(', '));

await app.addFlow({ type: 'report', id: 'q3', data: { title: 'Q3' }, onChildFailure: 'fail', children: [{ type: 'part', id: 'q3-atlantis', data: { region: 'atlantis' } }] });
const q3 = await app.subscribe('report', 'q3');
await app.wait(q3, 'finished', 60_000);
const failed = await app.getJob('report', 'q3');
console.log('q3:', failed?.outcome, failed?.error?.message);
await app.close();
console.log('closed');

if (at < 0) rmSync(path, { recursive: true, force: true });
