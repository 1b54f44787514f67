// Every runnable example in README.md runs to completion and prints what it
// promises: the README stays true.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

async function runExample(file: string, timeout = 90_000): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import=tsx', file], { cwd: root, timeout });
  return stdout;
}

test('the app demo processes jobs with worker actors, survives kills, and re-enqueues a silent worker\'s job', async (t) => {
  const out = await runExample('examples/app-demo.ts');
  t.regex(out, /kill notifier_sup\n(?:.*\n)*?\s+restarted: [^\n]*notifier_sup[^\n]*jobs_server/);
  t.regex(out, /kept running: [^\n]*activity_monitor_sup/);
  t.regex(out, /all 12 jobs finished: true/);
  t.regex(out, /stuck-1 is pending again after/);
  t.regex(out, /stuck-1 is finished/);
  t.regex(out, /jobs: 13 finished of 13/);
  t.regex(out, /closed\s*$/);
});

test('the quick start runs a handler through app.process, waits for it through a subscription and reads its result', async (t) => {
  const out = await runExample('examples/quick-start.ts');
  t.regex(out, /cat\.jpg: \{ width: 128, url: 'https:\/\/cdn\.example\/cat\.jpg\?w=128' \}/);
});

test('the web-and-worker example: a web process adds jobs and waits for their results, run by a worker process that is a client of its store', async (t) => {
  // Two processes, each loading the sources through tsx: twice an example's start-up.
  const out = await runExample('examples/web-and-worker/web.ts', 180_000);
  t.regex(out, /web \d+ is the store's owner/);
  t.regex(out, /worker \d+ is the store's client/);
  t.regex(out, /cat\.jpg: \{"width":128,"url":"https:\/\/cdn\.example\/cat\.jpg\?w=128"\}/);
  t.regex(out, /dog\.png: \{"width":64,"url":"https:\/\/cdn\.example\/dog\.png\?w=64"\}/);
  t.regex(out, /worker closed/);
  t.regex(out, /closed\s*$/);
});

test('the type limits example runs no more jobs at once than the concurrency, then lifts the limits', async (t) => {
  const out = await runExample('examples/type-limits.ts');
  t.regex(out, /12 jobs by 6 workers: at most [12] running at once; pending left: 0/);
  t.regex(out, /limits lifted: true/);
  t.regex(out, /closed\s*$/);
});

test('the groups example: one job per group at once, and every single-job group starts before the backlog gets a second turn', async (t) => {
  const out = await runExample('examples/group-limits.ts');
  t.regex(out, /limits: \{"group":\{"concurrency":1\}\}/);
  const lastSmall = Number(/209 reports by 4 workers; the 9 single-report tenants all started within the first (\d+) starts/.exec(out)?.[1]);
  t.true(lastSmall <= 10, out);
  t.regex(out, /tenant-big ran at most 1 report at once/);
});

test('the schedules example: each tick of an interval adds one job named after its time; schedules() lists the last and next ticks', async (t) => {
  const out = await runExample('examples/schedules.ts');
  t.regex(out, /ran: heartbeat@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z, heartbeat@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z/);
  t.regex(out, /heartbeat: last \S+Z, next \S+Z/);
  t.regex(out, /nightly: last -, next \d{4}-\d\d-\d\dT0[01]:00:00\.000Z/);
});

test('the pausing example: a paused type starts nothing, adds go on, a resume wakes the waiting accept', async (t) => {
  const out = await runExample('examples/pausing.ts');
  t.regex(out, /paused: true \[ 'email' \]/);
  t.regex(out, /accept while paused: undefined/);
  t.regex(out, /after resume: welcome-1/);
});

test('the flows example: a report waits for its parts (nested), reads their results, its flow subscription sees every job end, and a failed part fails its parent', async (t) => {
  const out = await runExample('examples/flows.ts');
  t.regex(out, /q2 is waiting/);
  t.regex(out, /q2 flow ended: q2 \(under nothing\), q2-north \(under q2\), q2-south \(under q2\), q2-south-coast \(under q2-south\) - last: q2/);
  t.regex(out, /q2 result: \{ title: 'Q2', total: 1000 \}/);
  t.regex(out, /q2 flow: q2-north succeeded \(0 children\), q2-south succeeded \(1 children\)/);
  t.regex(out, /q3: failed child job "q3-atlantis" of type "part" failed: no such region/);
  t.regex(out, /closed\s*$/);
});

test('the storage demo shows a retried conflict, a versionstamp and a watch', async (t) => {
  const out = await runExample('examples/storage-demo.ts');
  t.regex(out, /not_committed \(1020\)/);
  t.regex(out, /versionstamp/i);
  t.regex(out, /watch/i);
});

test('the jobs demo accepts, finishes, re-enqueues a silent worker and removes', async (t) => {
  const out = await runExample('examples/jobs-demo.ts');
  t.regex(out, /the silent worker's finish -> JobsError halt/);
  t.regex(out, /remove cat\.jpg -> true, again -> false/);
  t.regex(out, /4 workers finished 2000 jobs in [\d.]+ s; pending left: 0/);
  t.regex(out, /closed\s*$/);
});

test('the supervision demo restarts a killed counter and a stuck one on a new thread', async (t) => {
  const out = await runExample('examples/supervision-demo.ts');
  const restarts = out.match(/supervisor restarted counter/g) ?? [];
  t.is(restarts.length, 2);
  t.regex(out, /counter <\d+\.\d+> = 105/);
  t.regex(out, /thread replaced/);
  t.regex(out, /stopped\s*$/);
});
