// The admin endpoint's JSON API: one table of routes, each a method, a path
// pattern, whether it changes anything (then it needs the token), and a
// handler. Handlers return JSON values; errors become 4xx/5xx JSON answers.

import { type AddOptions, type JobOutcome, JobsError, type JobState, type JsonValue, type ScheduleSpec } from '@jobtree/core';
import type { ScheduleOptions } from '../app/app-schedules.js';
import type { AdminTarget } from './admin-target.js';
import type { DashboardSessions } from './dashboard-sessions.js';
import { AdminError } from './errors.js';
import type { JobActivity } from './job-activity.js';
import type { QueueSampler } from './queue-sampler.js';
import { runningScheduler, statsByType } from './scheduler-view.js';

export interface RouteContext {
  params: string[];
  query: URLSearchParams;
  body: Record<string, unknown>;
}

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Segments; `:x` matches one segment (URL-decoded). */
  path: string;
  mutates: boolean;
  /** Only the token passes, not a dashboard session: a session that could ask for codes would outlive its own end. */
  tokenOnly?: boolean;
  summary: string;
  handle(context: RouteContext): Promise<unknown>;
}

export interface RouteSources {
  app: AdminTarget;
  activity: JobActivity;
  queues: QueueSampler;
  pid: number;
  startedAt: number;
  sessions: DashboardSessions;
}

const STATES = new Set<string>(['waiting', 'pending', 'running', 'finished']);
const OUTCOMES = new Set<string>(['succeeded', 'failed', 'cancelled']);
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;
/** How long a kill waits to report the actor that replaced the killed one. */
const RESTART_WAIT_MS = 5_000;

export function adminRoutes(sources: RouteSources): Route[] {
  const { app } = sources;
  const routes: Route[] = [
    {
      method: 'GET',
      path: 'api',
      mutates: false,
      summary: 'this list',
      handle: async () => ({ routes: routes.map((r) => ({ method: r.method, path: `/${r.path}`, token: r.mutates, summary: r.summary })) }),
    },
    {
      method: 'GET',
      path: 'api/status',
      mutates: false,
      summary: 'the process, the supervision tree and the host threads',
      handle: async () => ({
        pid: sources.pid,
        startedAt: sources.startedAt,
        uptimeMs: Date.now() - sources.startedAt,
        now: Date.now(),
        threads: app.threads(),
        tree: app.tree(),
        scheduler: runningScheduler(app.scheduler()) !== undefined,
      }),
    },
    { method: 'GET', path: 'api/tree', mutates: false, summary: 'the live supervision tree', handle: async () => app.tree() },
    {
      method: 'GET',
      path: 'api/types',
      mutates: false,
      summary: 'job types with their timeout, whether paused, counts per state and totals since start',
      handle: async () => {
        const [sample, paused] = await Promise.all([sources.queues.sample(), app.getPausedTypes()]);
        const totals = sources.activity.totals();
        const pausedTypes = new Set(paused.map((each) => each.type));
        return {
          at: sample.at,
          types: sample.types.map((queue) => ({ ...queue, paused: pausedTypes.has(queue.type), totals: totals[queue.type] ?? null })),
        };
      },
    },
    {
      method: 'POST',
      path: 'api/types/:type/pause',
      mutates: true,
      summary: 'pause a type: no process starts its jobs until resumed (running ones finish)',
      handle: async ({ params }) => {
        const type = params[0] as string;
        await app.pause(type);
        return { type, paused: true };
      },
    },
    {
      method: 'POST',
      path: 'api/types/:type/resume',
      mutates: true,
      summary: 'resume a paused type: its backlog starts at once',
      handle: async ({ params }) => {
        const type = params[0] as string;
        await app.resume(type);
        return { type, paused: false };
      },
    },
    {
      method: 'PUT',
      path: 'api/types/:type/timeout',
      mutates: true,
      summary: 'set a type\'s activity timeout: { "seconds": 30 }',
      handle: async ({ params, body }) => {
        const type = params[0] as string;
        const seconds = body.seconds;
        if (typeof seconds !== 'number') throw new AdminError('bad_request', 'the body is { "seconds": <number> }');
        await app.setTypeTimeout(type, seconds);
        return { type, timeout: await app.getTypeTimeout(type) };
      },
    },
    {
      method: 'GET',
      path: 'api/types/:type/limits',
      mutates: false,
      summary: "a type's limits: { concurrency, rate: { max, perMs }, group: { concurrency, rate } }, null when it has none",
      handle: async ({ params }) => {
        const type = params[0] as string;
        return { type, limits: (await app.getLimits?.(type)) ?? null };
      },
    },
    {
      method: 'DELETE',
      path: 'api/types/:type/timeout',
      mutates: true,
      summary: 'clear a type\'s activity timeout',
      handle: async ({ params }) => {
        const type = params[0] as string;
        await app.clearTypeTimeout(type);
        return { type, timeout: null };
      },
    },
    {
      method: 'GET',
      path: 'api/schedules',
      mutates: false,
      summary: 'the schedules (recurring jobs), each with its last and next tick (ms since the epoch)',
      handle: async () => ({ at: Date.now(), schedules: await app.schedules() }),
    },
    {
      method: 'PUT',
      path: 'api/schedules/:name',
      mutates: true,
      summary:
        'set a schedule (replaces one of that name): { "spec": "0 * * * *" | { "everyMs": 60000 } | { "cron", "timezone"? }, "type": "report", "data"?, "priority"?, "timezone"?, "backfill"?: "none" | "last" | { "withinMs" } }',
      handle: async ({ params, body }) => {
        const name = params[0] as string;
        // Every other field is a schedule option: app.schedule refuses an unknown one (invalid_option) and a bad spec (invalid_schedule).
        const { spec, ...options } = body;
        const schedule = await app.schedule(name, spec as string | ScheduleSpec, options as unknown as ScheduleOptions);
        return { schedule };
      },
    },
    {
      method: 'DELETE',
      path: 'api/schedules/:name',
      mutates: true,
      summary: 'remove a schedule (the jobs its ticks added stay)',
      handle: async ({ params }) => {
        const name = params[0] as string;
        if (!(await app.unschedule(name))) throw new AdminError('not_found', `no schedule ${JSON.stringify(name)}`);
        return { name, removed: true };
      },
    },
    {
      method: 'GET',
      path: 'api/jobs/:type',
      mutates: false,
      summary: 'jobs of a type: ?state=pending|running|finished&outcome=succeeded|failed|cancelled&limit=100&offset=0',
      handle: async ({ params, query }) => {
        const type = params[0] as string;
        const state = query.get('state') ?? undefined;
        if (state !== undefined && !STATES.has(state)) throw new AdminError('bad_request', `state is pending, running or finished, got ${JSON.stringify(state)}`);
        const outcome = outcomeParam(query, state);
        const limit = integerParam(query, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
        const offset = integerParam(query, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
        const found = await app.foldJobs(
          type,
          (acc, job) => {
            if (state !== undefined && job.state !== state) return acc;
            if (acc.total >= offset && acc.jobs.length < limit) acc.jobs.push(job);
            acc.total += 1;
            return acc;
          },
          { total: 0, jobs: [] as unknown[] },
          outcome === undefined ? undefined : { outcome },
        );
        return { type, state: state ?? null, outcome: outcome ?? null, offset, limit, ...found };
      },
    },
    {
      method: 'GET',
      path: 'api/jobs/:type/:id',
      mutates: false,
      summary: 'one job with its data (and its scheduler history when a scheduler runs it)',
      handle: async ({ params }) => {
        const [type, id] = params as [string, string];
        const job = await app.getJob(type, id);
        if (job === undefined) throw new AdminError('not_found', `no job ${id} of type ${type}`);
        return { ...job, scheduler: app.scheduler()?.job(type, id) ?? null };
      },
    },
    {
      method: 'GET',
      path: 'api/flows/:type/:id',
      mutates: false,
      summary: 'the flow under a job as one tree: each job with its state and outcome (404 for a job in no flow)',
      handle: async ({ params }) => {
        const [type, id] = params as [string, string];
        const flow = await app.getFlow(type, id);
        if (flow === undefined) throw new AdminError('not_found', `job ${id} of type ${type} is in no flow`);
        return flow;
      },
    },
    {
      method: 'POST',
      path: 'api/jobs/:type/:id',
      mutates: true,
      summary: 'add a job: { "data": …, "priority"?: 0, "scheduledTime"?: epochSeconds, "continuous"?: false }',
      handle: async ({ params, body }) => {
        const [type, id] = params as [string, string];
        // Every other field is an add option: an unknown one is refused (invalid_option), not dropped.
        const { data, ...options } = body;
        const state: JobState = await app.add(type, id, (data ?? null) as JsonValue, options as AddOptions);
        return { type, id, state };
      },
    },
    {
      method: 'DELETE',
      path: 'api/jobs/:type/:id',
      mutates: true,
      summary: 'remove a job (a running one is cancelled)',
      handle: async ({ params }) => {
        const [type, id] = params as [string, string];
        const removed = await app.remove(type, id);
        if (!removed) throw new AdminError('not_found', `no job ${id} of type ${type}`);
        return { type, id, removed };
      },
    },
    {
      method: 'POST',
      path: 'api/jobs/:type/:id/retry',
      mutates: true,
      summary: 'run a failed or cancelled job again with its input (409 not_retryable for any other job)',
      handle: async ({ params }) => {
        const [type, id] = params as [string, string];
        await app.retry(type, id);
        return { type, id, state: 'pending' };
      },
    },
    {
      method: 'POST',
      path: 'api/jobs/:type/:id/cancel',
      mutates: true,
      summary: 'end a pending or running job as cancelled; "cancelled": false when it had ended already',
      handle: async ({ params }) => {
        const [type, id] = params as [string, string];
        return { type, id, cancelled: await app.cancel(type, id) };
      },
    },
    {
      method: 'POST',
      path: 'api/dashboard/codes',
      mutates: true,
      tokenOnly: true,
      summary: 'a single-use code, valid 60 s, that signs a browser in to the dashboard at GET /dashboard/open?code=… without the token in its URL',
      handle: async () => {
        const { code, expiresInMs } = sources.sessions.issueCode();
        return { code, path: `/dashboard/open?code=${code}`, expiresInMs };
      },
    },
    {
      method: 'GET',
      path: 'api/scheduler',
      mutates: false,
      summary: 'the scheduler\'s stats and jobs (like CouchDB\'s _scheduler/jobs), when the app runs processors',
      handle: async () => {
        const view = runningScheduler(app.scheduler());
        if (view === undefined) return { running: false, stats: null, jobs: null };
        return { running: true, stats: statsByType(view), jobs: view.jobs() };
      },
    },
    {
      method: 'POST',
      path: 'api/actors/:name/kill',
      mutates: true,
      summary: 'kill an actor (fault injection); answers with the actor that replaced it, if any within 5 s',
      handle: async ({ params }) => {
        const name = params[0] as string;
        const before = app.whereis(name);
        if (before === undefined) throw new AdminError('not_found', `no actor is registered as ${name}`);
        const root = app.tree().name;
        await app.kill(name);
        const deadline = Date.now() + RESTART_WAIT_MS;
        let after = app.whereis(name);
        // With the root gone the app stops: nothing will replace anything, and the endpoint closes.
        while ((after === undefined || after === before) && app.whereis(root) !== undefined && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          after = app.whereis(name);
        }
        return { name, killed: before, replacement: after === before ? null : (after ?? null) };
      },
    },
  ];
  return routes;
}

/** The answer an error gets: its status and JSON body. */
export function errorAnswer(error: unknown): { status: number; body: { error: { code: string; message: string } } } {
  if (error instanceof AdminError) return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  if (error instanceof JobsError) {
    const status = error.code === 'not_found' ? 404 : error.code === 'closed' || error.code === 'app_stopped' ? 503 : error.code.startsWith('invalid_') || error.code === 'no_type_timeout' ? 400 : 409;
    return { status, body: { error: { code: error.code, message: error.message } } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: { error: { code: 'internal', message } } };
}

/** `?outcome=`: only finished jobs end with one, so any other state asked for with it is a mistake. */
function outcomeParam(query: URLSearchParams, state: string | undefined): JobOutcome | undefined {
  const outcome = query.get('outcome') ?? undefined;
  if (outcome === undefined) return undefined;
  if (!OUTCOMES.has(outcome)) throw new AdminError('bad_request', `outcome is succeeded, failed or cancelled, got ${JSON.stringify(outcome)}`);
  if (state !== undefined && state !== 'finished') throw new AdminError('bad_request', `only finished jobs have an outcome, got state ${JSON.stringify(state)} with outcome ${JSON.stringify(outcome)}`);
  return outcome as JobOutcome;
}

function integerParam(query: URLSearchParams, name: string, fallback: number, least: number, most: number): number {
  const text = query.get(name);
  if (text === null) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < least || value > most) {
    throw new AdminError('bad_request', `${name} is an integer from ${least} to ${most}, got ${JSON.stringify(text)}`);
  }
  return value;
}
