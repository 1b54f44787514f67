// The dashboard: one HTML page with its styles, and its script
// (dashboard-client.js, plain browser JavaScript, no framework) read from
// next to this module, so it ships as it is in the built package.

import { readFileSync } from 'node:fs';

let client: string | undefined;

/** The browser script, read once. */
export function dashboardClient(): string {
  client ??= readFileSync(new URL('./dashboard-client.js', import.meta.url), 'utf8');
  return client;
}

export function dashboardPage(): string {
  return PAGE;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jobtree</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg: #fafaf7; --fg: #1d1f21; --muted: #6b7076; --line: #e2e2dc; --accent: #2b6cb0; --ok: #2f855a; --bad: #c53030; --warn: #b7791f; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; gap: 16px; align-items: baseline; padding: 10px 16px; border-bottom: 1px solid var(--line); background: #fff; }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { color: var(--muted); }
  #conn { margin-left: auto; }
  #conn.live::before { content: "● "; color: var(--ok); }
  #conn.down::before { content: "● "; color: var(--bad); }
  main { display: grid; grid-template-columns: minmax(340px, 1fr) minmax(420px, 1.3fr); gap: 16px; padding: 16px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; min-width: 0; }
  section h2 { font-size: 15px; margin: 0 0 8px; }
  .tree ul { list-style: none; margin: 0; padding-left: 18px; border-left: 1px dotted var(--line); }
  .tree > ul { padding-left: 0; border-left: 0; }
  .node { display: flex; gap: 8px; align-items: center; padding: 2px 4px; border-radius: 4px; }
  .node .name { font-family: ui-monospace, monospace; font-weight: 600; }
  .node .kind { font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; }
  .node .where, .node .uptime { color: var(--muted); font-size: 12px; }
  .node .restarts { font-size: 12px; color: var(--warn); }
  .node.down .name { color: var(--bad); }
  .node button { margin-left: auto; font-size: 11px; padding: 1px 6px; border: 1px solid var(--bad); color: var(--bad); background: #fff; border-radius: 3px; cursor: pointer; }
  .node button:hover { background: var(--bad); color: #fff; }
  .node.flash { animation: flash 1.6s ease-out; }
  @keyframes flash { 0% { background: #fed7d7; } 100% { background: transparent; } }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--line); font-variant-numeric: tabular-nums; }
  th { font-size: 12px; color: var(--muted); font-weight: 600; }
  tr.selected td { background: #ebf4ff; }
  tr[data-queue], tr[data-job] { cursor: pointer; }
  canvas.spark { width: 120px; height: 24px; display: block; }
  #queues-section { overflow-x: auto; }
  #queues th, #queues td { padding: 3px 4px; }
  .controls { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; }
  pre { background: #f4f4f0; padding: 8px; border-radius: 4px; overflow: auto; max-height: 320px; margin: 6px 0 0; font-size: 12px; }
  .muted { color: var(--muted); }
  .wide { grid-column: 1 / -1; }
  #failed td.error { color: var(--bad); font-family: ui-monospace, monospace; font-size: 12px; }
  #failed button, #job-detail button { font-size: 11px; padding: 1px 8px; border: 1px solid var(--accent); color: var(--accent); background: #fff; border-radius: 3px; cursor: pointer; }
  #failed button:hover, #job-detail button:hover { background: var(--accent); color: #fff; }
  #job-error { color: var(--bad); }
  #toast { position: fixed; bottom: 12px; right: 12px; background: var(--fg); color: #fff; padding: 6px 10px; border-radius: 4px; opacity: 0; transition: opacity .3s; }
  #toast.show { opacity: .92; }
</style>
</head>
<body>
<header>
  <h1>jobtree</h1>
  <span class="meta" id="meta">connecting…</span>
  <span id="conn" class="down">offline</span>
</header>
<main>
  <section class="tree" id="tree-section">
    <h2>Supervision tree</h2>
    <div id="tree"><p class="muted">waiting for the app…</p></div>
  </section>
  <section id="queues-section">
    <h2>Queues</h2>
    <table id="queues">
      <thead><tr><th>type</th><th>timeout</th><th title="a paused type starts no job in any process until resumed">paused</th><th>pending</th><th>running</th><th>finished</th><th>accepted/s</th><th>succeeded/s</th><th title="since the app started: jobs that finished, not given up">succeeded</th><th title="since the app started: runs that crashed, their jobs run again">crashed</th><th title="since the app started: jobs given up once out of attempts">failed</th><th>last minute</th></tr></thead>
      <tbody></tbody>
    </table>
    <p class="muted" id="queues-empty">no job types yet</p>
  </section>
  <section id="jobs-section">
    <h2>Jobs</h2>
    <div class="controls">
      <label>type <select id="job-type"></select></label>
      <label>state <select id="job-state"><option value="">all</option><option>waiting</option><option>pending</option><option>running</option><option>finished</option></select></label>
      <span class="muted" id="job-count"></span>
    </div>
    <table id="jobs"><thead><tr><th>id</th><th>state</th><th>priority</th><th>scheduled</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="job-section">
    <h2>Job <span id="job-title" class="muted">(click a job)</span></h2>
    <div id="job-detail"></div>
  </section>
  <section class="wide" id="failed-section">
    <h2>Failed jobs <span id="failed-type" class="muted"></span></h2>
    <p class="muted">Given up once out of attempts. Click one for its error and history; retry runs it again with its input.</p>
    <table id="failed"><thead><tr><th>id</th><th>attempts</th><th>error</th><th></th></tr></thead><tbody></tbody></table>
    <p class="muted" id="failed-empty">no failed jobs</p>
  </section>
  <section class="wide" id="schedules-section">
    <h2>Schedules</h2>
    <p class="muted">Recurring jobs: each tick adds one job, named after the schedule and the tick.</p>
    <table id="schedules"><thead><tr><th>name</th><th>when</th><th>type</th><th>backfill</th><th>last tick</th><th>next tick</th></tr></thead><tbody></tbody></table>
    <p class="muted" id="schedules-empty">no schedules</p>
  </section>
  <section class="wide" id="scheduler-section" hidden>
    <h2>Scheduler</h2>
    <div id="scheduler-stats" class="muted"></div>
    <table id="scheduler-jobs"><thead><tr><th>type</th><th>id</th><th>state</th><th>errors</th><th>info</th><th>last updated</th></tr></thead><tbody></tbody></table>
  </section>
</main>
<div id="toast"></div>
<script type="module" src="/dashboard.js"></script>
</body>
</html>
`;
