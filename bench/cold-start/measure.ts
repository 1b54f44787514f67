// Cold starts of the actor runtime, built JavaScript and TypeScript through
// tsx, each against a raw Worker start measured in the same child process
// (see cold-start.mjs). A child process per mode: the built runtime must run
// in a process with no tsx loaded at all, as a user's app does.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Cell } from '../table.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DRIVER = fileURLToPath(new URL('./cold-start.mjs', import.meta.url));
const BUILT_RUNTIME = new URL('../../packages/actors/dist/index.js', import.meta.url);

interface ColdStarts {
  dedicated: number[];
  pooled: number[];
  raw: number[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The median of per-repetition ratios: each pair ran back to back, under about the same load. */
function pairedRatio(numerator: number[], denominator: number[]): number {
  return median(numerator.map((value, i) => value / (denominator[i] as number)));
}

async function measure(repeats: number, source: boolean): Promise<ColdStarts> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const args = [...(source ? ['--import', 'tsx'] : []), DRIVER, String(repeats), ...(source ? ['--source'] : [])];
  const { stdout } = await run(process.execPath, args, { cwd: ROOT, env, timeout: 600_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as ColdStarts;
}

/** Rows for RATIO_HEADER: cold dedicated spawn and pool thread start vs a raw Worker start, built and from source. */
export async function coldStartRows(repeats: number): Promise<Cell[][]> {
  if (!existsSync(BUILT_RUNTIME)) throw new Error(`${fileURLToPath(BUILT_RUNTIME)} is missing: run \`pnpm build\` first`);
  const rows: Cell[][] = [];
  for (const source of [false, true]) {
    const result = await measure(repeats, source);
    const how = source ? 'TypeScript via tsx' : 'built JavaScript';
    const raw = median(result.raw);
    const row = (metric: string, values: number[]): Cell[] => [
      metric,
      median(values),
      raw,
      Number(pairedRatio(values, result.raw).toPrecision(3)),
      '-',
      'info',
    ];
    rows.push(row(`cold dedicated spawn, ${how} (ms) vs raw Worker start`, result.dedicated));
    rows.push(row(`pool thread start + first spawn, ${how} (ms) vs raw Worker start`, result.pooled));
  }
  return rows;
}
