// CPU seconds spent by this process and by the servers a peer needs, so that
// "CPU per job" compares whole systems: jobtree does its work inside the
// Node process, BullMQ and graphile-worker split it with Redis or Postgres.

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** /proc/<pid>/stat counts CPU time in clock ticks (USER_HZ, 100 on mainstream kernels). */
const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime, in seconds: the process and its reaped children. */
  seconds: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined; // gone between the directory listing and the read
  }
  // The command name is in parentheses and may itself hold spaces or ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
  const field = (n: number) => Number(fields[n - 3] ?? 0);
  return { pid, ppid: field(4), seconds: (field(14) + field(15) + field(16) + field(17)) / TICKS_PER_SECOND };
}

/**
 * CPU seconds of `root` and all its live descendants, plus the children it
 * has reaped (Postgres' backends exit and are reaped by the postmaster, so
 * their time moves into its cutime/cstime rather than vanishing).
 */
export function processTreeCpuSeconds(root: number): number {
  const stats: ProcStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat) stats.push(stat);
  }
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  let total = 0;
  const queue = stats.filter((stat) => stat.pid === root);
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    total += next.seconds;
    queue.push(...(children.get(next.pid) ?? []));
  }
  return total;
}

/** This process's CPU seconds (all its threads, so worker-thread handlers too). */
export function ownCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** Measures CPU seconds over a stretch of work: this process plus the given server process trees. */
export class CpuMeter {
  readonly #serverPids: readonly number[];
  #start = 0;

  constructor(serverPids: readonly number[]) {
    this.#serverPids = serverPids;
  }

  #now(): number {
    return ownCpuSeconds() + this.#serverPids.reduce((sum, pid) => sum + processTreeCpuSeconds(pid), 0);
  }

  start(): void {
    this.#start = this.#now();
  }

  /** CPU seconds since `start()`. */
  elapsed(): number {
    return this.#now() - this.#start;
  }
}
