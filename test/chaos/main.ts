// `pnpm test:chaos`: the chaos run and the kill -9 recovery loop, seeded.
//
//   pnpm test:chaos                                   a short run (100 faults, 10 kills), random seed
//   pnpm test:chaos --faults 1000 --kills 100 --report   the nightly size, with the table
//   pnpm test:chaos --seed 123456                      replay a seed's schedule of faults
//   pnpm test:chaos --exclude stall_handler,kill_system   never draw these kinds of fault
//   pnpm test:chaos --exclude kill_owner_with_clients   a crash loop of lone apps only
//   pnpm test:chaos --spare core,user_sup              never kill these system actors
//
// Exits 1 when any anomaly is found, after printing each with its job's
// history and the seed to replay it.

import { parseArgs } from 'node:util';

// The app's own logs (restarts, re-enqueues) would drown the run's output; JOBTREE_LOG_LEVEL=info shows them.
process.env.JOBTREE_LOG_LEVEL ??= 'silent';
import { runChaos } from './chaos-run.js';
import { FAULT_KINDS, type FaultKind } from './fault-schedule.js';
import { CRASH_FAULT_KINDS, type CrashFaultKind, runCrashLoop } from './crash-loop.js';
import { randomSeed } from './prng.js';
import { formatReport } from './report.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    faults: { type: 'string', default: '100' },
    kills: { type: 'string', default: '10' },
    report: { type: 'boolean', default: false },
    exclude: { type: 'string', default: '' },
    spare: { type: 'string', default: '' },
  },
});

const seed = values.seed === undefined ? randomSeed() : Number(values.seed);
const faults = Number(values.faults);
const kills = Number(values.kills);
if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(faults) || faults < 0 || !Number.isSafeInteger(kills) || kills < 0) {
  console.error('usage: pnpm test:chaos [--seed N] [--faults N] [--kills N] [--exclude kind,kind] [--spare name,name] [--report]');
  process.exit(2);
}
const excluded = values.exclude.split(',').filter((kind) => kind !== '');
const spare = values.spare.split(',').filter((name) => name !== '');
for (const kind of excluded) {
  if (!(FAULT_KINDS as readonly string[]).includes(kind) && !(CRASH_FAULT_KINDS as readonly string[]).includes(kind)) {
    console.error(`unknown fault kind ${JSON.stringify(kind)}; the kinds: ${[...FAULT_KINDS, ...CRASH_FAULT_KINDS].join(', ')}`);
    process.exit(2);
  }
}
const exclude = excluded.filter((kind) => (FAULT_KINDS as readonly string[]).includes(kind)) as FaultKind[];
const excludeCrash = excluded.filter((kind) => (CRASH_FAULT_KINDS as readonly string[]).includes(kind)) as CrashFaultKind[];

console.log(`chaos run, seed ${seed}: ${faults} faults in process, then ${kills} kill -9 of a loaded app (some of them owning a store shared with live clients)`);
const chaos = await runChaos({ seed, faults, exclude, spare, progress: (line) => console.log(line) });
console.log(`  in-process run done in ${(chaos.elapsedMs / 1000).toFixed(1)} s, ${chaos.anomalies.length} anomalies`);
const crash = await runCrashLoop({ seed, kills, exclude: excludeCrash, progress: (line) => console.log(line) });
console.log(`  crash loop done in ${(crash.elapsedMs / 1000).toFixed(1)} s, ${crash.anomalies.length} anomalies`);

if (values.report) console.log(`\n${formatReport(chaos, crash)}`);
const descriptions = [...chaos.descriptions, ...crash.descriptions];
if (descriptions.length > 0) {
  console.error(`\n${descriptions.length} anomalies (seed ${seed}; replay with: pnpm test:chaos --seed ${seed} --faults ${faults} --kills ${kills}${excluded.length > 0 ? ` --exclude ${excluded.join(',')}` : ''}${spare.length > 0 ? ` --spare ${spare.join(',')}` : ''}):`);
  for (const description of descriptions.slice(0, 50)) console.error(`- ${description}`);
  process.exit(1);
}
console.log(`no anomalies (seed ${seed})`);
