// Benchmark of recurring jobs, run by `pnpm bench:schedules
// [--seconds N]`: a schedule ticking every second (a six-field cron
// expression) for N seconds (600 by default) on a store shared by two
// processes, the store's owner killed (SIGKILL) three times along the way,
// each time a fresh process started in its place (the client takes the store
// over). Target: exactly one job per tick, from the schedule's start to its
// last tick: no tick without its job (the ticks of a handover are late, not
// missed), no job of a time that is not a tick.

import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openJobs, tickJobId } from '@jobtree/core';
import { benchOptions, positiveNumber } from './bench-options.js';

const USAGE = `usage: pnpm bench:schedules [--seconds N]
  --seconds N      how long the schedule ticks, once a second (default 600), the owner killed 3 times along the way`;
const args = benchOptions(USAGE, { seconds: { type: 'string', default: '600' } });
const seconds = positiveNumber(USAGE, '--seconds', args.seconds);
const CHILD = fileURLToPath(new URL('./schedules-fixtures/ticker-child.ts', import.meta.url));
const RESTARTS = 3;

interface Child {
  process: ChildProcess;
  role: string;
}

async function start(path: string, schedule: boolean): Promise<Child> {
  const child = fork(CHILD, [path, schedule ? 'schedule' : ''], { execArgv: ['--import=tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const role = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: { role: string }) => resolve(message.role));
    child.once('exit', (code) => reject(new Error(`a ticker process exited (${code}) before it was ready`)));
  });
  return { process: child, role };
}

async function roleOf(child: Child): Promise<string> {
  child.process.send('role');
  return new Promise((resolve) => child.process.once('message', (message: { role: string }) => resolve(message.role)));
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-bench-schedules-'));
  const children: Child[] = [];
  try {
    children.push(await start(dir, true));
    children.push(await start(dir, false));
    console.log(`schedule every second for ${seconds} s, two processes, ${RESTARTS} owner kills`);
    const started = Date.now();
    for (let restart = 1; restart <= RESTARTS; restart++) {
      await new Promise((resolve) => setTimeout(resolve, started + (restart * seconds * 1000) / (RESTARTS + 1) - Date.now()));
      let owner: Child | undefined;
      for (const child of children) if ((await roleOf(child)) === 'owner') owner = child;
      if (owner === undefined) throw new Error('no process owns the store');
      owner.process.kill('SIGKILL');
      await new Promise((resolve) => owner.process.once('exit', resolve));
      children.splice(children.indexOf(owner), 1);
      children.push(await start(dir, false));
      console.log(`${Math.round((Date.now() - started) / 1000)} s: killed the owner (pid ${owner.process.pid}), started pid ${children.at(-1)?.process.pid}`);
    }
    await new Promise((resolve) => setTimeout(resolve, started + seconds * 1000 - Date.now()));
    for (const child of children) {
      child.process.send('stop');
      await new Promise((resolve) => child.process.once('exit', resolve));
    }
    children.length = 0;
    const jobs = await openJobs({ path: dir });
    try {
      const schedule = await jobs.getSchedule('every-second');
      if (schedule === undefined || schedule.lastTick === null) throw new Error('the schedule never ticked');
      const expected = new Set<string>();
      for (let tick = Math.floor(schedule.setAt / 1000) * 1000 + 1000; tick <= schedule.lastTick; tick += 1000) expected.add(tickJobId('every-second', tick));
      const ids = (await jobs.getJobs('tick')).map((job) => job.id);
      const missing = [...expected].filter((id) => !ids.includes(id));
      const extra = ids.filter((id) => !expected.has(id));
      console.log(`ticks: ${expected.size}, jobs: ${ids.length}, ticks without a job: ${missing.length}, jobs of no tick: ${extra.length}`);
      console.log(missing.length === 0 && extra.length === 0 && ids.length === expected.size ? 'exactly one job per tick: yes' : `exactly one job per tick: NO (missing ${missing.slice(0, 5).join(', ')}; extra ${extra.slice(0, 5).join(', ')})`);
    } finally {
      await jobs.close();
    }
  } finally {
    for (const child of children) child.process.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
