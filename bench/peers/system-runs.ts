// Runs one system's scenarios in a process of its own (system-process.ts),
// the way its users run it: no other system's clients, threads or garbage
// in the same process. The child gets the servers this process started; it
// is killed if the benchmark stops first.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PeerBenchError } from './errors.js';
import type { Measurement, Scenario } from './scenarios.js';
import type { SystemEnvironment, SystemKey } from './systems/catalog.js';
import type { RetentionSetting } from './systems/retention-setting.js';
import type { Teardown } from './teardown.js';

export interface SystemProcessTask {
  key: SystemKey;
  scenarios: Scenario[];
  env: SystemEnvironment;
  /** Under `--retention`: jobtree's variant with retention on or off. */
  retention?: RetentionSetting;
}

/** What a system process prints on stdout for each scenario it ran. */
export const RESULT_PREFIX = '@result ';

const CHILD = fileURLToPath(new URL('./system-process.ts', import.meta.url));

/** Runs `task` in a new process; resolves with a measurement per scenario key it ran. */
export function runInOwnProcess(task: SystemProcessTask, teardown: Teardown): Promise<Map<string, Measurement>> {
  // The same loader this process runs under (tsx), so the child reads the TypeScript sources too.
  const child = spawn(process.execPath, [...process.execArgv, CHILD, JSON.stringify(task)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  teardown.add(`system process ${task.key}${task.retention === undefined ? '' : `, retention ${task.retention}`}`, kill, kill);
  const results = new Map<string, Measurement>();
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.startsWith(RESULT_PREFIX)) {
        const { scenario, measurement } = JSON.parse(line.slice(RESULT_PREFIX.length)) as { scenario: string; measurement: Measurement };
        results.set(scenario, measurement);
      } else if (line.length > 0) console.log(line);
    }
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(results);
      else reject(new PeerBenchError('run_failed', `the process of ${task.key} exited with ${signal ?? `code ${code}`}`));
    });
  });
}
