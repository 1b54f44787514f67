// The dashboard's browser script: listens to /api/events (server-sent
// events) and redraws the tree, the queues, the jobs of the selected type
// and the failed ones, the schedules, and the scheduler; kill, retry, pause and resume buttons post to the
// API signed in by the session cookie `jobtree dashboard --open` left, or
// with the token from the page's #token=… fragment or typed when asked
// (kept in sessionStorage, never sent in a URL).

const $ = (selector) => document.querySelector(selector);
const HISTORY = 60;

const state = {
  tree: undefined,
  threads: [],
  now: Date.now(),
  clockSkew: 0,
  queues: [],
  paused: new Set(), // the paused types
  totals: {},
  lastTotals: undefined,
  samples: [], // recent { at, totals }, for rates over RATE_WINDOW_MS
  rates: new Map(), // type -> { accepted, finished, series: number[] }
  ids: new Map(), // actor name -> id, to flash the places whose actor changed
  flashing: new Map(), // actor name -> until (ms)
  selectedType: '',
  selectedJob: undefined,
  jobsKey: '',
  jobsFetchedAt: 0,
  jobsTimer: undefined,
};

const TOKEN_KEY = 'jobtree-token';
const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) {
  sessionStorage.setItem(TOKEN_KEY, fromHash);
  history.replaceState(null, '', location.pathname + location.search);
}

/** Asks for the token (after a 401: no session, or a token that is not this app's). */
function askToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  const value = prompt('Token (from the data directory\'s admin.token, or `jobtree dashboard`):') || '';
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  return value;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (name === 'class') node.className = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

function toast(text) {
  const box = $('#toast');
  box.textContent = text;
  box.classList.add('show');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => box.classList.remove('show'), 2500);
}

function duration(ms) {
  if (ms === undefined || ms === null || ms < 0) return '';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

async function api(method, path, body) {
  const send = () => {
    const headers = { 'content-type': 'application/json' };
    if (method !== 'GET') {
      // Marks the request as the dashboard's own, which lets its session cookie stand for the token.
      headers['x-jobtree-dashboard'] = '1';
      const stored = sessionStorage.getItem(TOKEN_KEY);
      if (stored) headers.authorization = `Bearer ${stored}`;
    }
    return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  };
  let res = await send();
  if (res.status === 401 && method !== 'GET' && askToken()) res = await send();
  const value = await res.json();
  if (!res.ok) {
    if (res.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    throw new Error(value.error ? `${value.error.code}: ${value.error.message}` : `HTTP ${res.status}`);
  }
  return value;
}

// --- the tree -----------------------------------------------------------------

function renderTree() {
  const root = state.tree;
  if (!root) return;
  const now = Date.now();
  // The server sends the tree when it changes; uptimes advance on the app's clock as seen from here.
  state.now = now + state.clockSkew;
  showMeta();
  const seen = new Map();
  const build = (node) => {
    seen.set(node.name, node.id);
    const before = state.ids.get(node.name);
    if (before !== undefined && node.id !== undefined && before !== node.id) state.flashing.set(node.name, now + 1600);
    const flashing = (state.flashing.get(node.name) ?? 0) > now;
    const row = el(
      'div',
      {
        class: `node${node.id === undefined ? ' down' : ''}${flashing ? ' flash' : ''}`,
        'data-actor': node.name,
        'data-id': node.id ?? '',
        'data-restarts': node.restarts,
        'data-started': node.id === undefined ? undefined : node.startedAt,
      },
      el('span', { class: 'name' }, node.name),
      el('span', { class: 'kind' }, node.kind),
      el('span', { class: 'where' }, node.id === undefined ? 'down' : `${node.id} · thread ${node.thread ?? '?'}`),
      node.restarts > 0 ? el('span', { class: 'restarts', title: 'restarts' }, `↻ ${node.restarts}`) : null,
      el('span', { class: 'uptime' }, node.startedAt ? `up ${duration(state.now - node.startedAt)}` : ''),
      node.id === undefined ? null : el('button', { type: 'button', title: `kill ${node.name}`, 'data-kill': node.name, onclick: () => kill(node.name) }, 'kill'),
    );
    const item = el('li', {}, row);
    if (node.children.length > 0) item.append(el('ul', {}, ...node.children.map(build)));
    return item;
  };
  const list = el('ul', {}, build(root));
  state.ids = seen;
  $('#tree').replaceChildren(list);
}

/** What killing these actors does beyond a restart: the dashboard asks before it does it. */
const KILL_WARNINGS = new Map([
  [
    'jobs_sup',
    'Kill jobs_sup, the root supervisor?\n\nNothing restarts it: the whole app stops. Every call fails with app_stopped, subscriptions end, running handlers are signalled, this dashboard loses its app, and with onRootExit \'exit\' the process exits. Only a new start brings it back.',
  ],
  [
    'core',
    'Kill core?\n\njobs_sup restarts core and every actor started after it: user_sup with your actors and processors (running handlers are cut, their jobs go back to the queue), the activity monitors, the notifiers and jobs_server. More than 3 such restarts within 10 s stop the whole app.',
  ],
]);

async function kill(name) {
  const warning = KILL_WARNINGS.get(name);
  if (warning !== undefined && !confirm(warning)) return;
  try {
    const result = await api('POST', `/api/actors/${encodeURIComponent(name)}/kill`);
    if (name === 'jobs_sup') {
      toast(`jobs_sup: ${result.killed} killed, the app stopped`);
      return;
    }
    toast(result.replacement ? `${name}: ${result.killed} killed, now ${result.replacement}` : `${name}: ${result.killed} killed`);
  } catch (error) {
    toast(`kill ${name}: ${error.message}`);
  }
}

/** Advances the uptimes in place (rebuilding the tree would replace a button under the pointer). */
function tickUptimes() {
  if (!state.tree) return;
  state.now = Date.now() + state.clockSkew;
  showMeta();
  for (const row of document.querySelectorAll('[data-started]')) {
    const uptime = row.querySelector('.uptime');
    if (uptime) uptime.textContent = `up ${duration(state.now - Number(row.getAttribute('data-started')))}`;
  }
}

function showMeta() {
  const threads = state.threads.length;
  $('#meta').textContent = `${threads} host thread${threads === 1 ? '' : 's'} · jobs_sup up ${duration(state.now - (state.tree.startedAt ?? state.now))}`;
}

// --- queues ---------------------------------------------------------------------

/** Rates are taken over this window, so that one slow second does not read as a stall. */
const RATE_WINDOW_MS = 5000;

function updateRates(sample) {
  const totals = sample.totals || {};
  state.samples.push({ at: sample.at, totals });
  while (state.samples.length > 2 && sample.at - state.samples[1].at >= RATE_WINDOW_MS) state.samples.shift();
  const first = state.samples[0];
  const seconds = (sample.at - first.at) / 1000;
  for (const queue of sample.types) {
    const now = totals[queue.type] || { accepted: 0, finished: 0 };
    const before = first.totals[queue.type] || { accepted: 0, finished: 0 };
    const rate = state.rates.get(queue.type) || { accepted: 0, finished: 0, series: [] };
    if (seconds > 0) {
      rate.accepted = (now.accepted - before.accepted) / seconds;
      rate.finished = (now.finished - before.finished) / seconds;
      rate.series.push(rate.finished);
      if (rate.series.length > HISTORY) rate.series.shift();
    }
    state.rates.set(queue.type, rate);
  }
  state.lastTotals = { at: sample.at, totals };
}

function spark(series) {
  const canvas = el('canvas', { class: 'spark', width: 120, height: 24 });
  const ctx = canvas.getContext('2d');
  if (!ctx || series.length < 2) return canvas;
  const max = Math.max(1, ...series);
  ctx.strokeStyle = '#2b6cb0';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  series.forEach((value, i) => {
    const x = (i / (HISTORY - 1)) * 120;
    const y = 23 - (value / max) * 21;
    if (i === 0) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
  });
  ctx.stroke();
  return canvas;
}

/** A type's limits after its timeout: ' · ≤2 running, 500/1000 ms, per group ≤1 running', or nothing. */
function limitsText(limits) {
  if (limits === undefined || limits === null) return '';
  const parts = [];
  if (limits.concurrency !== undefined) parts.push(`≤${limits.concurrency} running`);
  if (limits.rate !== undefined) parts.push(`${limits.rate.max}/${limits.rate.perMs} ms`);
  const group = limits.group;
  if (group?.concurrency !== undefined) parts.push(`per group ≤${group.concurrency} running`);
  if (group?.rate !== undefined) parts.push(`per group ${group.rate.max}/${group.rate.perMs} ms`);
  return ` · ${parts.join(', ')}`;
}

function renderQueues() {
  const body = $('#queues tbody');
  $('#queues-empty').hidden = state.queues.length > 0;
  body.replaceChildren(
    ...state.queues.map((queue) => {
      const rate = state.rates.get(queue.type) || { accepted: 0, finished: 0, series: [] };
      const totals = state.lastTotals?.totals[queue.type];
      return el(
        'tr',
        { 'data-queue': queue.type, class: queue.type === state.selectedType ? 'selected' : '', onclick: () => selectType(queue.type) },
        el('td', {}, queue.type),
        el('td', {}, `${queue.timeout === undefined || queue.timeout === null ? '—' : `${queue.timeout}s`}${limitsText(queue.limits)}`),
        el('td', {}, pauseButton(queue.type, state.paused.has(queue.type))),
        el('td', { 'data-count': 'pending' }, String(queue.pending)),
        el('td', { 'data-count': 'running' }, String(queue.running)),
        el('td', { 'data-count': 'finished' }, String(queue.finished)),
        el('td', {}, rate.accepted.toFixed(1)),
        el('td', {}, rate.finished.toFixed(1)),
        // A type nothing happened to since the app started has no totals yet: zeros.
        ...['finished', 'crashed', 'failed'].map((name) => el('td', { 'data-total': name }, String(totals?.[name] ?? 0))),
        el('td', {}, spark(rate.series)),
      );
    }),
  );
  const select = $('#job-type');
  const types = state.queues.map((queue) => queue.type);
  if (select.options.length !== types.length || types.some((type, i) => select.options[i].value !== type)) {
    select.replaceChildren(...types.map((type) => el('option', { value: type }, type)));
  }
  if (!state.selectedType && types.length > 0) state.selectedType = types[0];
  select.value = state.selectedType;
}

function renderSchedules(schedules) {
  $('#schedules-empty').hidden = schedules.length > 0;
  const time = (ms) => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('.000Z', 'Z'));
  const every = (ms) => (ms % 1000 === 0 ? duration(ms) : `${ms} ms`);
  const when = (spec) => (spec.everyMs !== undefined ? `every ${every(spec.everyMs)}` : spec.timezone ? `${spec.cron} (${spec.timezone})` : spec.cron);
  const backfill = (policy) => (typeof policy === 'string' ? policy : `within ${duration(policy.withinMs)}`);
  $('#schedules tbody').replaceChildren(
    ...schedules.map((schedule) =>
      el(
        'tr',
        { 'data-schedule': schedule.name },
        el('td', {}, schedule.name),
        el('td', {}, when(schedule.spec)),
        el('td', {}, schedule.type),
        el('td', {}, backfill(schedule.backfill)),
        el('td', { 'data-tick': 'last' }, time(schedule.lastTick)),
        el('td', { 'data-tick': 'next' }, time(schedule.nextTick)),
      ),
    ),
  );
}

// --- jobs -------------------------------------------------------------------------

function selectType(type) {
  state.selectedType = type;
  state.jobsKey = '';
  renderQueues();
  void refreshJobs(true);
}

/** Listing a type's jobs reads all of them on the server: at most one listing per this many ms per page. */
const JOBS_REFRESH_MS = 2000;

async function refreshJobs(forced) {
  const type = state.selectedType;
  if (!type) return;
  const wait = state.jobsFetchedAt + JOBS_REFRESH_MS - Date.now();
  if (!forced && wait > 0) {
    state.jobsTimer ??= setTimeout(() => {
      state.jobsTimer = undefined;
      void refreshJobs();
    }, wait);
    return;
  }
  const filter = $('#job-state').value;
  const queue = state.queues.find((q) => q.type === type);
  const key = `${type}|${filter}|${queue ? `${queue.pending},${queue.running},${queue.finished}` : ''}|${state.lastTotals?.totals[type]?.added ?? 0}`;
  if (key === state.jobsKey) return;
  state.jobsKey = key;
  state.jobsFetchedAt = Date.now();
  const query = new URLSearchParams({ limit: '200' });
  if (filter) query.set('state', filter);
  try {
    const result = await api('GET', `/api/jobs/${encodeURIComponent(type)}?${query}`);
    $('#job-count').textContent = `${result.total} job${result.total === 1 ? '' : 's'}${result.total > result.jobs.length ? ` (first ${result.jobs.length})` : ''}`;
    $('#jobs tbody').replaceChildren(
      ...result.jobs.map((job) =>
        el(
          'tr',
          { 'data-job': job.id, 'data-state': job.state, class: job.id === state.selectedJob ? 'selected' : '', onclick: () => showJob(type, job.id) },
          el('td', {}, job.id),
          el('td', {}, job.state),
          el('td', {}, String(job.priority)),
          el('td', {}, new Date(job.scheduledTime * 1000).toLocaleTimeString()),
        ),
      ),
    );
    if (state.selectedJob) void showJob(type, state.selectedJob, true);
  } catch (error) {
    $('#job-count').textContent = error.message;
  }
  await refreshFailed(type);
}

/** The selected type's jobs given up: read from their own rows in the store, not by a scan of every job. */
async function refreshFailed(type) {
  $('#failed-type').textContent = type;
  try {
    const result = await api('GET', `/api/jobs/${encodeURIComponent(type)}?outcome=failed&limit=200`);
    $('#failed-empty').hidden = result.jobs.length > 0;
    $('#failed tbody').replaceChildren(
      ...result.jobs.map((job) =>
        el(
          'tr',
          { 'data-failed-job': job.id, class: job.id === state.selectedJob ? 'selected' : '', onclick: () => showJob(type, job.id) },
          el('td', {}, job.id),
          el('td', {}, String(job.attempts)),
          el('td', { class: 'error' }, job.error ? `${job.error.name}: ${job.error.message}` : ''),
          el('td', {}, retryButton(type, job.id)),
        ),
      ),
    );
  } catch (error) {
    $('#failed-empty').hidden = false;
    $('#failed-empty').textContent = error.message;
  }
}

function retryButton(type, id) {
  return el(
    'button',
    {
      type: 'button',
      title: `run ${id} again with its input`,
      'data-retry': id,
      onclick: (event) => {
        event.stopPropagation();
        void retry(type, id);
      },
    },
    'retry',
  );
}

function pauseButton(type, paused) {
  return el(
    'button',
    {
      type: 'button',
      title: paused ? `${type} is paused: resume it (its backlog starts at once)` : `pause ${type}: no process starts its jobs until resumed`,
      'data-pause': type,
      class: paused ? 'paused' : '',
      onclick: (event) => {
        event.stopPropagation();
        void setPaused(type, !paused);
      },
    },
    paused ? 'resume' : 'pause',
  );
}

async function setPaused(type, paused) {
  try {
    await api('POST', `/api/types/${encodeURIComponent(type)}/${paused ? 'pause' : 'resume'}`);
    if (paused) state.paused.add(type);
    else state.paused.delete(type);
    toast(`${type}: ${paused ? 'paused' : 'resumed'}`);
  } catch (error) {
    toast(`${paused ? 'pause' : 'resume'} ${type}: ${error.message}`);
  }
  renderQueues();
}

async function retry(type, id) {
  try {
    await api('POST', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}/retry`);
    toast(`${type} / ${id}: runs again`);
  } catch (error) {
    toast(`retry ${id}: ${error.message}`);
  }
  state.jobsKey = '';
  await refreshJobs(true);
}

async function showJob(type, id, quiet) {
  state.selectedJob = id;
  $('#job-title').textContent = `${type} / ${id}`;
  try {
    const job = await api('GET', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
    const ended = job.outcome ? ` · ${job.outcome}` : '';
    const parts = [
      el('p', {}, `state ${job.state}${ended} · attempts ${job.attempts} · priority ${job.priority} · ${job.continuous ? 'continuous' : 'one-shot'} · scheduled ${new Date(job.scheduledTime * 1000).toLocaleString()}`),
      el('pre', { id: 'job-data' }, JSON.stringify(job.data, null, 2)),
    ];
    if (job.result !== undefined) parts.push(el('h3', {}, 'result'), el('pre', { id: 'job-result' }, JSON.stringify(job.result, null, 2)));
    if (job.error) parts.push(el('h3', {}, 'error'), el('pre', { id: 'job-error' }, `${job.error.name}: ${job.error.message}`));
    if (job.outcome === 'failed' || job.outcome === 'cancelled') parts.push(retryButton(type, id));
    // A running scheduler's history is the newest; a job given up keeps the one stored with its error.
    const history = job.scheduler?.history ?? job.error?.history;
    if (history) {
      parts.push(el('h3', {}, 'history'), el('pre', { id: 'job-history' }, history.map((h) => `${h.timestamp} ${h.type}${h.reason ? ` ${h.reason}` : ''}`).join('\n')));
    }
    // A job of a flow shows the flow under it, and a link to its parent.
    const flow = job.inFlow ? await api('GET', `/api/flows/${encodeURIComponent(type)}/${encodeURIComponent(id)}`).catch(() => undefined) : undefined;
    if (flow) {
      parts.push(el('h3', {}, 'flow'));
      if (flow.parent) parts.push(el('p', {}, 'parent ', flowLink(flow.parent)));
      parts.push(el('div', { id: 'job-flow', class: 'tree' }, el('ul', {}, flowItem(flow))));
    }
    $('#job-detail').replaceChildren(...parts);
  } catch (error) {
    if (!quiet) $('#job-detail').replaceChildren(el('p', { class: 'muted' }, error.message));
  }
}

/** A job of a flow as a link that shows it. */
function flowLink(ref) {
  return el('a', { href: '#', onclick: (event) => { event.preventDefault(); showJob(ref.type, ref.id); } }, `${ref.type} / ${ref.id}`);
}

/** One job of a flow and, under it, its children. */
function flowItem(node) {
  const how = node.state === undefined ? 'gone' : node.outcome ? `${node.state} · ${node.outcome}` : node.state;
  const waits = node.unfinished > 0 ? ` · waits for ${node.unfinished} (${node.onChildFailure} on a child's failure)` : '';
  const item = el('li', { 'data-job': `${node.type}/${node.id}` }, flowLink(node), el('span', { class: 'muted' }, ` ${how}${waits}`));
  if (node.error) item.append(el('span', { class: 'muted' }, ` — ${node.error.name}: ${node.error.message}`));
  if (node.children.length > 0) item.append(el('ul', {}, ...node.children.map(flowItem)));
  return item;
}

// --- scheduler ----------------------------------------------------------------------

function renderScheduler(view) {
  // null: the app's processors stopped, and with them its scheduler.
  $('#scheduler-section').hidden = view === null;
  if (view === null) return;
  const stats = Object.entries(view.stats || {}).map(
    ([type, s]) => `${type || 'all'}: ${s.running} running, ${s.pending} pending, ${s.crashed} crashed (of ${s.total})`,
  );
  $('#scheduler-stats').textContent = stats.join(' · ');
  $('#scheduler-jobs tbody').replaceChildren(
    ...(view.jobs?.jobs || []).map((job) =>
      el('tr', { 'data-scheduler-job': job.id }, el('td', {}, job.type), el('td', {}, job.id), el('td', {}, job.state), el('td', {}, String(job.error_count)), el('td', {}, job.info ?? ''), el('td', {}, job.last_updated)),
    ),
  );
}

// --- the stream -----------------------------------------------------------------------

function connect() {
  const source = new EventSource('/api/events');
  source.addEventListener('open', () => {
    $('#conn').className = 'live';
    $('#conn').textContent = 'live';
  });
  source.addEventListener('error', () => {
    $('#conn').className = 'down';
    $('#conn').textContent = 'reconnecting';
  });
  source.addEventListener('tree', (event) => {
    const value = JSON.parse(event.data);
    state.tree = value.tree;
    state.threads = value.threads;
    state.clockSkew = value.now - Date.now();
    renderTree();
  });
  source.addEventListener('restart', (event) => {
    const value = JSON.parse(event.data);
    state.flashing.set(value.child, Date.now() + 1600);
    toast(`${value.child} restarted by ${value.supervisor}`);
  });
  source.addEventListener('queues', (event) => {
    const value = JSON.parse(event.data);
    updateRates(value);
    state.queues = value.types;
    state.paused = new Set(value.paused || []);
    renderQueues();
    renderSchedules(value.schedules || []);
    void refreshJobs();
  });
  source.addEventListener('scheduler', (event) => renderScheduler(JSON.parse(event.data)));
}

$('#job-type').addEventListener('change', (event) => selectType(event.target.value));
$('#job-state').addEventListener('change', () => {
  state.jobsKey = '';
  void refreshJobs(true);
});
connect();
setInterval(tickUptimes, 1000);
