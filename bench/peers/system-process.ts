// One system of the peer benchmark in a process of its own, as its users
// run it: started by the benchmark (system-runs.ts) with the servers it
// already started, it opens that one system, runs the scenarios it is given
// in order (letting the machine settle before each; before the first drain,
// a smaller drain that warms the process up, unmeasured), prints each
// measurement as a `@result` line on stdout, and exits. Progress and
// errors go to stderr.
//
//   node --import tsx bench/peers/system-process.ts '<json of SystemProcessTask>'

import type { BenchSystem } from './bench-system.js';
import { loadPg } from './peer-modules.js';
import { Quiescer } from './quiesce.js';
import { scenarioRun, summary, warmUpRuns } from './scenarios.js';
import { RESULT_PREFIX, type SystemProcessTask } from './system-runs.js';
import { openSystem } from './systems/catalog.js';

async function main(task: SystemProcessTask): Promise<void> {
  // Postgres, to checkpoint it between runs, when a peer's run started it.
  const admin = task.env.postgres === undefined ? undefined : new (await loadPg()).Client({ connectionString: task.env.postgres.connectionString });
  await admin?.connect();
  let system: BenchSystem | undefined;
  try {
    system = await openSystem(task.key, task.env, task.retention);
    const quiescer = new Quiescer(admin);
    const label = `${system.label}${task.retention === undefined ? '' : `, retention ${task.retention}`}`;
    for (const warmUp of warmUpRuns(system, task.scenarios)) {
      await quiescer.quiesce();
      console.error(`    ${label.padEnd(22)} ${summary(await warmUp.run())}  [${warmUp.what}]`);
    }
    for (const scenario of task.scenarios) {
      const run = scenarioRun(system, scenario);
      if (run === undefined) continue;
      await quiescer.quiesce();
      const measurement = await run();
      console.error(`    ${label.padEnd(22)} ${summary(measurement)}  [${scenario.key}, own process]`);
      process.stdout.write(`${RESULT_PREFIX}${JSON.stringify({ scenario: scenario.key, measurement })}\n`);
    }
  } finally {
    await system?.close();
    await admin?.end();
  }
}

try {
  await main(JSON.parse(process.argv[2] ?? '') as SystemProcessTask);
  // The peers' clients may keep sockets or timers alive after their close; nothing is left to wait for.
  process.exit(0);
} catch (error) {
  console.error(error instanceof Error ? `${error.name}${'code' in error ? ` (${String(error.code)})` : ''}: ${error.message}` : error);
  process.exit(1);
}
