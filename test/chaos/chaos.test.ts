// The chaos suite at the size `pnpm test` can afford: a seeded in-process
// run with random faults against the whole tree, and a kill -9 recovery
// loop of five kills, one of them of a store's owner with live clients.
// `pnpm test:chaos` runs the same at any size (see docs/reliability.md). A
// failure names its seed; CHAOS_SEED=N replays it.

import test from 'ava';
import { runChaos } from './chaos-run.js';
import { runCrashLoop } from './crash-loop.js';
import { randomSeed } from './prng.js';

const seed = process.env.CHAOS_SEED === undefined ? randomSeed() : Number(process.env.CHAOS_SEED);

test('under random faults no acknowledged job is lost or finished twice, subscribers all end, running jobs have live workers', async (t) => {
  t.timeout(110_000);
  t.log(`seed ${seed} (replay: CHAOS_SEED=${seed})`);
  const result = await runChaos({ seed, faults: 40, everyMs: 150, progress: (line) => t.log(line) });
  t.log(`seed ${seed}: ${[...result.faults].map(([kind, n]) => `${kind} ${n}`).join(', ')}; ${result.jobs} jobs, ${result.historyLines} operations`);
  t.true(result.faults.size > 0);
  t.deepEqual(result.descriptions, [], `anomalies with seed ${seed} (replay: CHAOS_SEED=${seed})`);
});

test('after each kill -9 of a loaded app (one of them owning a store shared with live clients) the store is consistent, and the jobs running at a kill are finished once', async (t) => {
  t.timeout(110_000);
  t.log(`seed ${seed} (replay: CHAOS_SEED=${seed})`);
  const result = await runCrashLoop({ seed, kills: 5, ownerWithClients: 1, jobsPerRound: 40, progress: (line) => t.log(line) });
  t.log(`seed ${seed}: ${result.kills} kills (${result.kinds.get('kill_owner_with_clients') ?? 0} of an owner with clients), ${result.jobs} jobs, ${result.runningAtKill} running at a kill`);
  t.is(result.storeChecks, 6);
  t.is(result.kinds.get('kill_owner_with_clients'), 1);
  t.is(result.runningAtKillFinished, result.runningAtKill);
  t.deepEqual(result.descriptions, [], `anomalies with seed ${seed} (replay: CHAOS_SEED=${seed})`);
});
