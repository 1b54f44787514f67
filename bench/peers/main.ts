// Side-by-side benchmark of jobtree (its LocalQueue, and app.process with
// handlers on the main thread and in threads), BullMQ (Worker and sandboxed
// processors, on Redis) and graphile-worker (as it comes and batched, on
// Postgres), run by `pnpm bench:peers [--rounds N] [--jobs SCALE]
// [--only WORDS] [--mode isolated|shared|both] [--quick] [--retention]`.
//
// Installs what it needs (Debian's redis-server and PostgreSQL, the peers'
// npm packages into bench/peers/node_modules), starts both servers on
// 127.0.0.1 in a scratch folder, runs every scenario on every system in
// each round (the order of systems rotating between rounds), each system in
// a process of its own (`isolated`, as users run them) and/or all in this
// one (`shared`), checks after each run that every job finished exactly
// once, stops everything it started, and prints per mode the medians over
// the rounds with the best round beside them, then the issue's targets.
// Redis and Postgres are installed and started only when a peer runs.
//
// `--retention` runs jobtree's variants only, each twice a round, with
// retention on (what `startJobs` does by default) and off (`retention:
// false`), one right after the other, the first of the two alternating
// between rounds; it prints per variant and drain the ratio of the medians
// on / off and the best rounds' (see systems/retention-setting.ts).

import { chmodSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { badOption, benchOptions } from '../bench-options.js';
import { formatTable } from '../table.js';
import { type IdleWake, idleWakeRows, measureIdleWake, medianWake } from '../idle-wake.js';
import type { BenchSystem } from './bench-system.js';
import { ensurePeerPackages, ensureServers } from './install.js';
import { loadPg, type PgClient } from './peer-modules.js';
import { Quiescer } from './quiesce.js';
import { formatTargets, formatValues, type Samples } from './report.js';
import { formatRetentionComparison } from './retention-report.js';
import { describe, type Measurement, SCENARIO_KINDS, type Scenario, scenarioRun, scenarios as allScenarios, summary, warmUpRuns } from './scenarios.js';
import { startPostgres, startRedis } from './servers.js';
import { runInOwnProcess } from './system-runs.js';
import { isJobtreeKey, isSystemKey, OPT_IN_KEYS, openSystem, SYSTEM_KEYS, type SystemEnvironment, type SystemKey } from './systems/catalog.js';
import { type RetentionSetting, settingsOfRound } from './systems/retention-setting.js';
import { LOCAL_QUEUE } from './systems/local-queue.js';
import { Teardown } from './teardown.js';

const MODES = ['isolated', 'shared'] as const;
type Mode = (typeof MODES)[number];

const USAGE = `usage: pnpm bench:peers [--rounds N] [--jobs SCALE] [--only WORDS] [--mode isolated|shared|both] [--quick] [--retention]
  --rounds N       rounds (default 3; --quick 1); the order of the systems rotates between rounds
  --jobs SCALE     multiplies every job count (default 1; --quick 0.1)
  --only WORDS     comma-separated system keys (${SYSTEM_KEYS.join(', ')}),
                   scenario kinds (${SCENARIO_KINDS.join(', ')}) and drains' handler counts (@1, @8, @50):
                   of each sort named, only those run
  --mode M         isolated (default): each system in its own process; shared: all in this one; both
  --quick          1 round, job counts x0.1: a smoke run
  --retention      jobtree's variants only, each twice a round, retention on and off
See bench/peers/README.md.`;
const args = benchOptions(USAGE, {
  quick: { type: 'boolean', default: false },
  rounds: { type: 'string' },
  jobs: { type: 'string' },
  only: { type: 'string' },
  mode: { type: 'string', default: 'isolated' },
  retention: { type: 'boolean', default: false },
});
const quick = args.quick === true;
const retention = args.retention === true;
const rounds = args.rounds === undefined ? (quick ? 1 : 3) : Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) badOption(USAGE, `--rounds must be a positive integer, got ${args.rounds}`);
const scale = args.jobs === undefined ? (quick ? 0.1 : 1) : Number(args.jobs);
if (!(scale > 0) || !Number.isFinite(scale)) badOption(USAGE, `--jobs must be a positive number (a scale of the job counts), got ${args.jobs}`);
const modes: Mode[] = args.mode === 'both' ? [...MODES] : MODES.includes(args.mode as Mode) ? [args.mode as Mode] : [];
if (modes.length === 0) badOption(USAGE, `--mode must be isolated, shared or both, got ${args.mode}`);

/**
 * `--only`: comma-separated words, each a system key (local-queue,
 * app.process, app.process-threads, bullmq, bullmq-sandboxed, graphile,
 * graphile-batched, jobtree-single) or a scenario kind (drain, first-job,
 * latency, adds) or a drain's handler count (`@8`). Systems, scenario kinds
 * and handler counts not named are left out when at least one of their sort is named.
 */
const only = (args.only ?? '')
  .split(',')
  .map((word) => word.trim())
  .filter((word) => word.length > 0);
for (const word of only) {
  if (!isSystemKey(word) && !(SCENARIO_KINDS as readonly string[]).includes(word) && !/^@\d+$/.test(word)) {
    badOption(USAGE, `--only: ${word} is neither a system (${SYSTEM_KEYS.join(', ')}) nor a scenario (${SCENARIO_KINDS.join(', ')}, @<handlers>)`);
  }
}
const namedSystems = only.filter(isSystemKey);
if (retention && namedSystems.some((key) => !isJobtreeKey(key))) {
  badOption(USAGE, `--retention compares jobtree's variants with retention on and off; --only names a peer: ${namedSystems.filter((key) => !isJobtreeKey(key)).join(', ')}`);
}
const systemKeys: SystemKey[] =
  namedSystems.length > 0
    ? SYSTEM_KEYS.filter((key) => namedSystems.includes(key))
    : SYSTEM_KEYS.filter((key) => !OPT_IN_KEYS.includes(key) && (!retention || isJobtreeKey(key)));
const needsServers = systemKeys.some((key) => !isJobtreeKey(key));
/** A round's settings: on and off under --retention, else the one run of each system as it comes. */
const settingsOf = (round: number): (RetentionSetting | undefined)[] => (retention ? settingsOfRound(round) : [undefined]);
const namedKinds = only.filter((word) => (SCENARIO_KINDS as readonly string[]).includes(word));
const namedWorkers = only.filter((word) => /^@\d+$/.test(word)).map((word) => Number(word.slice(1)));
const scenarios: Scenario[] = allScenarios(scale).filter(
  (s) => (namedKinds.length === 0 || namedKinds.includes(s.kind)) && (namedWorkers.length === 0 || s.kind !== 'drain' || namedWorkers.includes(s.workers)),
);

const latencyScenario = scenarios.find((s): s is Extract<Scenario, { kind: 'latency' }> => s.kind === 'latency');
/** The machine's wake-up after idling (idle-wake.ts), measured once a round when the latency scenario runs. */
const machineWakes: IdleWake[] = [];

async function probeMachine(): Promise<void> {
  if (latencyScenario === undefined) return;
  const wake = await measureIdleWake(latencyScenario.samples, latencyScenario.gapMs);
  machineWakes.push(wake);
  console.log(`  the machine: a CPU slice after ${latencyScenario.gapMs} ms idle p50 ${wake.slice.p50.toFixed(2)} ms, p99 ${wake.slice.p99.toFixed(2)} ms (back to back p99 ${wake.busySlice.p99.toFixed(2)})`);
}

type Results = Map<string, Map<SystemKey, Measurement[]>>;
/** A mode's results by retention setting (undefined without --retention). */
type SettingResults = Map<RetentionSetting | undefined, Results>;

function record(bySetting: SettingResults, setting: RetentionSetting | undefined, scenario: string, key: SystemKey, measurement: Measurement): void {
  const results = bySetting.get(setting) ?? new Map<string, Map<SystemKey, Measurement[]>>();
  bySetting.set(setting, results);
  const byKey = results.get(scenario) ?? new Map<SystemKey, Measurement[]>();
  results.set(scenario, byKey);
  byKey.set(key, [...(byKey.get(key) ?? []), measurement]);
}

const withSetting = (what: string, setting: RetentionSetting | undefined) => (setting === undefined ? what : `${what}, retention ${setting}`);

/** Rotating the order gives each system each position in turn: none always runs first on a cold disk or last on a warm one. */
function rotated<T>(items: readonly T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** Each system in a process of its own, per round: it runs every scenario, then exits. */
async function runIsolated(teardown: Teardown, env: SystemEnvironment, results: SettingResults): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const order = rotated(systemKeys, round);
    console.log(`\nisolated, round ${round + 1}/${rounds}: ${order.join(', ')}${retention ? `; retention ${settingsOfRound(round).join(', then ')}` : ''}`);
    for (const key of order) {
      for (const setting of settingsOf(round)) {
        console.log(`  ${withSetting(key, setting)} (own process): ${scenarios.map(describe).join('; ')}`);
        const measured = await runInOwnProcess({ key, scenarios, env, ...(setting === undefined ? {} : { retention: setting }) }, teardown);
        for (const [scenario, measurement] of measured) record(results, setting, scenario, key, measurement);
      }
    }
    await probeMachine();
  }
}

/** Every system in this process, as the benchmark always ran them: per round, per scenario, each system in turn. */
async function runShared(teardown: Teardown, env: SystemEnvironment, quiescer: Quiescer, results: SettingResults): Promise<void> {
  const systems = new Map<RetentionSetting | undefined, BenchSystem[]>();
  for (const setting of settingsOf(0)) {
    const opened: BenchSystem[] = [];
    for (const key of systemKeys) {
      const system = await openSystem(key, env, setting);
      teardown.add(withSetting(system.label, setting), () => system.close());
      opened.push(system);
      for (const warmUp of warmUpRuns(system, scenarios)) {
        await quiescer.quiesce();
        console.log(`  ${withSetting(system.label, setting).padEnd(22)} ${summary(await warmUp.run())}  [${warmUp.what}]`);
      }
    }
    systems.set(setting, opened);
  }
  for (let round = 0; round < rounds; round++) {
    const order = rotated(systemKeys, round);
    console.log(`\nshared process, round ${round + 1}/${rounds}: ${order.join(', ')}${retention ? `; retention ${settingsOfRound(round).join(', then ')}` : ''}`);
    for (const scenario of scenarios) {
      console.log(`  ${describe(scenario)}`);
      for (const key of order) {
        for (const setting of settingsOf(round)) {
          const system = systems.get(setting)?.[systemKeys.indexOf(key)];
          const run = system && scenarioRun(system, scenario);
          if (system === undefined || run === undefined) continue;
          await quiescer.quiesce();
          const measurement = await run();
          console.log(`    ${withSetting(system.label, setting).padEnd(22)} ${summary(measurement)}`);
          record(results, setting, scenario.key, key, measurement);
        }
      }
    }
    await probeMachine();
  }
}

const DURABILITY: Record<SystemKey, string> = {
  'local-queue': 'fsync, group commit',
  'app.process': 'fsync, group commit',
  'app.process-threads': 'fsync, group commit',
  'jobtree-single': 'fsync, group commit',
  bullmq: 'AOF everysec',
  'bullmq-sandboxed': 'AOF everysec',
  graphile: 'fsync on',
  'graphile-batched': 'fsync on',
};

async function main(teardown: Teardown): Promise<void> {
  console.log(
    `peer benchmark: ${rounds} round${rounds === 1 ? '' : 's'}, job counts x${scale}, ${modes.join(' and ')}; ` +
      `systems ${systemKeys.join(', ')}; scenarios ${scenarios.map((s) => s.key).join(', ')}`,
  );
  const scratch = await mkdtemp(join(tmpdir(), 'jobtree-peers-'));
  chmodSync(scratch, 0o755); // Postgres runs as its own user and must reach its folder inside
  teardown.add('scratch folder', () => rm(scratch, { recursive: true, force: true }));
  const env: SystemEnvironment = { scratch };
  let admin: PgClient | undefined;
  if (needsServers) {
    const binaries = ensureServers();
    ensurePeerPackages();
    console.log('starting redis-server and postgres on 127.0.0.1');
    const redis = await startRedis(teardown, binaries, scratch);
    const postgres = await startPostgres(teardown, binaries, scratch);
    console.log(`  redis-server pid ${redis.pid} port ${redis.port}; postgres pid ${postgres.pid} port ${postgres.port}`);
    Object.assign(env, { redis, postgres });
    const pg = await loadPg();
    const client = new pg.Client({ connectionString: postgres.connectionString });
    admin = client;
    await client.connect();
    teardown.add('postgres admin connection', () => client.end());
  }

  const byMode = new Map<Mode, SettingResults>();
  for (const mode of modes) {
    const results: SettingResults = new Map();
    byMode.set(mode, results);
    if (mode === 'isolated') await runIsolated(teardown, env, results);
    else await runShared(teardown, env, new Quiescer(admin), results);
  }

  const durability = new Map(systemKeys.map((key) => [key, DURABILITY[key]]));
  for (const [mode, bySetting] of byMode) {
    const where = mode === 'isolated' ? 'each system in its own process' : 'all systems in one process';
    for (const [setting, results] of bySetting) {
      const samples: Samples = results;
      console.log(
        `\n${withSetting(where, setting)}: median of ${rounds} round${rounds === 1 ? '' : 's'} (best round in parentheses); every run checked: each job finished exactly once\n`,
      );
      console.log(formatValues(systemKeys, durability, samples, scenarios));
      if (retention) continue;
      console.log(`\ntargets (${where}; ratios of medians, and of the best rounds)\n`);
      console.log(formatTargets(systemKeys, samples, scenarios));
    }
    if (!retention) continue;
    const settings = new Map<RetentionSetting, Samples>();
    for (const [setting, results] of bySetting) if (setting !== undefined) settings.set(setting, results);
    console.log(`\nretention on / off (${where}; on: startJobs' defaults, off: retention: false; medians over ${rounds} rounds, best rounds in parentheses)\n`);
    console.log(formatRetentionComparison(systemKeys, settings, scenarios));
  }
  if (latencyScenario !== undefined && machineWakes.length > 0) {
    console.log(
      `\nthe machine's own wake-up after idling, no job system involved (median over ${machineWakes.length} measurement${machineWakes.length === 1 ? '' : 's'} of ${latencyScenario.samples} samples each, ms):`,
    );
    console.log('a slow wake-up stretches whatever runs first after a pause; it sets the p99 of every idle-worker latency above.\n');
    console.log(formatTable(['probe', 'p50', 'p99'], idleWakeRows(medianWake(machineWakes), latencyScenario.gapMs)));
  }
  console.log(
    [
      '',
      'durability: jobtree resolves an add or finish once its group commit is fsynced; Postgres (fsync on,',
      'synchronous_commit on) once its WAL is flushed; Redis appends to its AOF and fsyncs once a second,',
      'so BullMQ may lose the last second of acknowledged work in a crash.',
      `LocalQueue: addMany, and workers sharing the core's LocalQueue (at most ${LOCAL_QUEUE} jobs taken and not yet run).`,
      "app.process: startJobs and app.process(type, handler, { maxJobs: W }); the handler a function on the main thread, or (threads) a module in the app's handler threads.",
      'BullMQ: a Worker with concurrency W; sandboxed: a processor file with useWorkerThreads (a thread per running job).',
      `graphile batched: its local queue (${LOCAL_QUEUE} jobs per fetch) and batched completion (completeJobBatchDelay 0).`,
      'first job: one job waits, then the workers start; timed from process() resolving (app.process), the LocalQueue made,',
      "BullMQ's Worker made, graphile's run() resolving, to the job's completion.",
      "CPU: the process plus the server's process tree, adding the jobs included, per 10,000 jobs.",
      'A drain is timed from the first handler start to the last confirmed completion; before its first drain, each system',
      'drains a quarter of the first drain at each handler count the drains use, unmeasured, so the drains measure a',
      'warmed-up worker.',
    ].join('\n'),
  );
}

const teardown = new Teardown();
try {
  await main(teardown);
} catch (error) {
  console.error(error instanceof Error ? `${error.name}${'code' in error ? ` (${String(error.code)})` : ''}: ${error.message}` : error);
  process.exitCode = 1;
} finally {
  console.log('\nstopping what the benchmark started');
  await teardown.run();
  // Clients of the peers may keep sockets or timers alive after their close;
  // nothing is left to wait for.
  setTimeout(() => process.exit(), 2_000).unref();
}
