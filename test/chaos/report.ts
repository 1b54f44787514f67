// The table `pnpm test:chaos --report` prints.

import type { ChaosRunResult } from './chaos-run.js';
import type { CrashLoopResult } from './crash-loop.js';

export function formatReport(chaos: ChaosRunResult, crash: CrashLoopResult): string {
  const rows: [string, string][] = [];
  const faults = [...chaos.faults].sort(([a], [b]) => a.localeCompare(b));
  for (const [kind, count] of faults) rows.push([`fault: ${kind}`, String(count)]);
  rows.push(['fault: kill -9 of the whole process', String(crash.kinds.get('kill_process') ?? 0)]);
  rows.push(["fault: kill -9 of the store's owner with live clients", String(crash.kinds.get('kill_owner_with_clients') ?? 0)]);
  const total = faults.reduce((sum, [, count]) => sum + count, 0) + crash.kills;
  rows.push(['faults injected in total', String(total)]);
  rows.push(['  storage attempts failed: not_committed (1020)', String(chaos.storageErrors.conflict)]);
  rows.push(['  storage attempts failed: transaction_too_old (1007)', String(chaos.storageErrors.too_old)]);
  rows.push(['  storage commits run twice: commit_unknown_result (1021)', String(chaos.storageErrors.unknown_result)]);
  rows.push(['jobs (in-process run)', String(chaos.jobs)]);
  const runs = chaos.handlerRuns;
  rows.push(['  of which run by the scheduler\'s handlers: finished / crashed / stopped / given up', `${runs.finished} / ${runs.crashed} / ${runs.stopped} / ${runs.failed}`]);
  rows.push(['jobs (crash loop)', String(crash.jobs)]);
  rows.push(['  running at a kill -9, then finished once', `${crash.runningAtKillFinished} of ${crash.runningAtKill}`]);
  const failures = new Map(chaos.failures);
  for (const [key, count] of crash.failures) failures.set(key, (failures.get(key) ?? 0) + count);
  for (const [key, count] of [...failures].sort(([a], [b]) => a.localeCompare(b))) rows.push([`calls answered with an error: ${key}`, String(count)]);
  rows.push(['histories checked', `2 (${chaos.historyLines + crash.historyLines} operations)`]);
  rows.push(['store invariant checks', String(chaos.storeChecks + crash.storeChecks)]);
  rows.push(['anomalies (must be 0)', String(chaos.anomalies.length + crash.anomalies.length)]);
  const kinds = new Map<string, number>();
  for (const anomaly of [...chaos.anomalies, ...crash.anomalies]) kinds.set(anomaly.kind, (kinds.get(anomaly.kind) ?? 0) + 1);
  for (const [kind, count] of [...kinds].sort(([a], [b]) => a.localeCompare(b))) rows.push([`  ${kind}`, String(count)]);
  rows.push(['time', `${((chaos.elapsedMs + crash.elapsedMs) / 1000).toFixed(1)} s (in-process ${(chaos.elapsedMs / 1000).toFixed(1)} s, crash loop ${(crash.elapsedMs / 1000).toFixed(1)} s)`]);
  rows.push(['seed', String(chaos.seed)]);
  const width = Math.max(...rows.map(([label]) => label.length));
  const valueWidth = Math.max(...rows.map(([, value]) => value.length));
  const line = `+${'-'.repeat(width + 2)}+${'-'.repeat(valueWidth + 2)}+`;
  return [line, ...rows.map(([label, value]) => `| ${label.padEnd(width)} | ${value.padStart(valueWidth)} |`), line].join('\n');
}
