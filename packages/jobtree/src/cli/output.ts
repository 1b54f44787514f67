// Text output of the commands (`--json` prints the backend's values instead).

import type { FlowNode, JobError, JobInfo } from '@jobtree/core';
import type { TreeNode } from '../app/live-tree.js';
import type { JobView, JobsView, KillReport, SchedulerReport, SchedulesView, StatusView, TypeView } from './backend.js';

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/**
 * `text` with its control characters written as escapes (`\n`, `\u001b`).
 * Ids, data and errors come from anyone who can add a job or throw in a
 * handler: printed raw, they could move the cursor, recolour or retitle the
 * operator's terminal, or split a table's row.
 */
export function printable(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0x20 && (code < 0x7f || code > 0x9f)) out += char;
    else out += CONTROL_ESCAPES[char] ?? `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return out;
}

/** The same, line by line: the newlines between a text's lines are kept. */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}

const CONTROL_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Rows of cells as aligned columns. */
export function table(header: string[], unsafeRows: string[][]): string {
  const rows = unsafeRows.map((row) => row.map(printable));
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatStatus(status: StatusView, types: TypeView[]): string {
  const lines: string[] = [];
  if (!status.running || status.tree === null) {
    lines.push('no app running: read from the store directly');
  } else {
    const threads = status.threads?.length ?? 0;
    lines.push(`app pid ${status.pid} at ${status.url}, up ${duration(status.uptimeMs)}, ${threads} host thread${threads === 1 ? '' : 's'}${status.scheduler ? ', scheduler running' : ''}`);
    lines.push('');
    const rows: string[][] = [];
    const walk = (node: TreeNode, prefix: string, last: boolean, root: boolean) => {
      const branch = root ? '' : `${prefix}${last ? '└─ ' : '├─ '}`;
      rows.push([
        `${branch}${node.name}`,
        node.kind,
        node.id ?? 'down',
        node.thread === undefined ? '-' : String(node.thread),
        String(node.restarts),
        node.startedAt === undefined || node.id === undefined ? '-' : duration(status.now - node.startedAt),
      ]);
      const inner = root ? '' : `${prefix}${last ? '   ' : '│  '}`;
      node.children.forEach((child, i) => {
        walk(child, inner, i === node.children.length - 1, false);
      });
    };
    walk(status.tree, '', true, true);
    lines.push(table(['actor', 'kind', 'id', 'thread', 'restarts', 'uptime'], rows));
  }
  lines.push('');
  lines.push(types.length === 0 ? 'no job types' : formatTypes(types));
  return lines.join('\n');
}

/** Under the types table when a running app gave its totals. */
const TOTALS_NOTE = 'accepted, succeeded, crashed, failed: since the app started (a crashed run is retried, a failed job was given up)';

export function formatTypes(types: TypeView[]): string {
  const total = (t: TypeView, name: 'accepted' | 'finished' | 'crashed' | 'failed') => (t.totals === null ? '-' : String(t.totals[name]));
  const rows = table(
    ['type', 'timeout', 'paused', 'pending', 'running', 'finished', 'accepted', 'succeeded', 'crashed', 'failed'],
    types.map((t) => [
      t.type,
      t.timeout === undefined || t.timeout === null ? '-' : `${t.timeout}s`,
      t.paused ? 'paused' : '-',
      String(t.pending),
      String(t.running),
      String(t.finished),
      total(t, 'accepted'),
      total(t, 'finished'),
      total(t, 'crashed'),
      total(t, 'failed'),
    ]),
  );
  return types.some((t) => t.totals !== null) ? `${rows}\n${TOTALS_NOTE}` : rows;
}

export function formatSchedules(view: SchedulesView): string {
  if (view.schedules.length === 0) return 'no schedules';
  const time = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
  return table(
    ['name', 'when', 'type', 'backfill', 'last tick', 'next tick'],
    view.schedules.map((schedule) => [
      schedule.name,
      'everyMs' in schedule.spec ? `every ${schedule.spec.everyMs} ms` : `${schedule.spec.cron}${schedule.spec.timezone === undefined ? '' : ` (${schedule.spec.timezone})`}`,
      schedule.type,
      typeof schedule.backfill === 'string' ? schedule.backfill : `within ${schedule.backfill.withinMs} ms`,
      time(schedule.lastTick),
      time(schedule.nextTick),
    ]),
  );
}

export function formatJobs(view: JobsView): string {
  // The jobs given up are listed for their errors; the others for their data.
  const errors = view.outcome === 'failed';
  const rows = view.jobs.map((job: JobInfo) => [
    job.id,
    job.state,
    String(job.priority),
    new Date(job.scheduledTime * 1000).toISOString(),
    job.continuous ? 'continuous' : '',
    job.outcome ?? '',
    String(job.attempts),
    errors ? errorLine(job.error) : short(job.data),
  ]);
  const next = view.offset + view.jobs.length;
  const more =
    view.total > view.jobs.length
      ? `\n(${view.offset + 1}-${next} of ${view.total}${next < view.total ? `; --offset ${next} for the next ${Math.min(view.limit, view.total - next)}` : ''})`
      : '';
  const which = [view.state, view.outcome].filter((word) => word !== null).join(' ');
  const none = `no ${which}${which === '' ? '' : ' '}jobs of type ${view.type}`;
  if (rows.length === 0 && view.total > 0) {
    // Past the end: say how many there are, so that the page asked for is not taken for an empty type.
    const lastPage = Math.floor((view.total - 1) / view.limit) * view.limit;
    return `${none} at offset ${view.offset}: there ${view.total === 1 ? 'is 1' : `are ${view.total}`} (the last page starts at --offset ${lastPage})`;
  }
  if (rows.length === 0) return none;
  return table(['id', 'state', 'priority', 'scheduled', 'kind', 'outcome', 'attempts', errors ? 'error' : 'data'], rows) + more;
}

/** A flow as an indented tree: each job with its state and outcome, each parent with its policy and unfinished children. */
export function formatFlow(root: FlowNode): string {
  const lines: string[] = [];
  const describe = (node: FlowNode): string => {
    const parts = [`${node.type}/${node.id}`, node.state ?? 'gone (removed or pruned)'];
    if (node.outcome !== undefined) parts.push(node.error === undefined ? node.outcome : `${node.outcome}: ${node.error.message}`);
    if (node.onChildFailure !== undefined) parts.push(`(${node.onChildFailure}: ${node.unfinished ?? 0} of ${node.children.length} children unfinished)`);
    return printable(parts.join('  '));
  };
  const visit = (node: FlowNode, prefix: string, last: boolean): void => {
    lines.push(`${prefix}${last ? '└─ ' : '├─ '}${describe(node)}`);
    node.children.forEach((child, i) => {
      visit(child, `${prefix}${last ? '   ' : '│  '}`, i === node.children.length - 1);
    });
  };
  lines.push(describe(root) + (root.parent === undefined ? '' : printable(`  under ${root.parent.type}/${root.parent.id}`)));
  root.children.forEach((child, i) => {
    visit(child, '', i === root.children.length - 1);
  });
  return lines.join('\n');
}

export function formatJob(job: JobView): string {
  const lines = [
    printable(`${job.type} / ${job.id}`),
    `state      ${job.state}`,
    `priority   ${job.priority}`,
    `scheduled  ${new Date(job.scheduledTime * 1000).toISOString()}`,
    `kind       ${job.continuous ? 'continuous' : 'one-shot'}${job.resubmit ? ', flagged to run again' : ''}`,
    `data       ${indented(job.data)}`,
    `attempts   ${job.attempts}`,
  ];
  if (job.outcome !== undefined) lines.push(`outcome    ${job.outcome}`);
  if (job.result !== undefined) lines.push(`result     ${indented(job.result)}`);
  if (job.error !== undefined) lines.push(`error      ${errorLine(job.error)}`);
  // A running scheduler's history is the newest; a job given up keeps the one its scheduler stored with the error.
  const history = ((job.scheduler as { history?: unknown[] } | null)?.history ?? job.error?.history) as { timestamp?: string; type?: string; reason?: string }[] | undefined;
  if (history !== undefined) {
    lines.push('history');
    for (const event of history) lines.push(printable(`  ${event.timestamp}  ${event.type}${event.reason === undefined ? '' : `  ${event.reason}`}`));
  }
  return lines.join('\n');
}

export function formatScheduler(report: SchedulerReport): string {
  if (!report.running) return 'the app runs no scheduler (no job processors: app.process)';
  const stats = Object.entries((report.stats ?? {}) as Record<string, { total: number; pending: number; running: number; crashed: number }>);
  const lines = stats.map(([type, s]) => `${type || 'all types'}: ${s.running} running, ${s.pending} pending, ${s.crashed} crashed (${s.total} tracked)`);
  const jobs = (report.jobs as { jobs?: { type: string; id: string; state: string; error_count: number; info: string | null; last_updated: string }[] } | null)?.jobs ?? [];
  if (jobs.length > 0) {
    lines.push('');
    lines.push(table(['type', 'id', 'state', 'errors', 'last updated', 'info'], jobs.map((j) => [j.type, j.id, j.state, String(j.error_count), j.last_updated, j.info ?? ''])));
  }
  return lines.join('\n');
}

export function formatKill(report: KillReport): string {
  return report.replacement === null
    ? `killed ${report.name} (${report.killed}); nothing replaced it within 5 s`
    : `killed ${report.name} (${report.killed}); restarted as ${report.replacement}`;
}

function errorLine(error: JobError | undefined): string {
  return error === undefined ? '' : printable(`${error.name}: ${error.message}`);
}

function indented(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? 'undefined').replace(/\n/g, '\n           ');
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
