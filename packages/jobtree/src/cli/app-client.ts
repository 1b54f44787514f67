// The backend for a running app: its admin endpoint's JSON API.

import type { AddOptions, FlowNode, JobOutcome, JobState, JsonValue, TypeLimits } from '@jobtree/core';
import type { Backend, JobView, JobsView, KillReport, SchedulerReport, SchedulesView, StatusView, TypesView } from './backend.js';
import { CliError } from './cli-error.js';

/** A request that takes longer than this means the app is stuck, not busy. */
const REQUEST_TIMEOUT_MS = 30_000;

export class AppClient implements Backend {
  readonly kind = 'app';
  readonly #url: string;
  readonly #token: string | undefined;

  constructor(url: string, token: string | undefined) {
    this.#url = url.replace(/\/+$/, '');
    this.#token = token;
  }

  get url(): string {
    return this.#url;
  }

  async status(): Promise<StatusView> {
    const value = await this.#request<Omit<StatusView, 'running' | 'url'>>('GET', '/api/status');
    return { running: true, url: this.#url, pid: value.pid, uptimeMs: value.uptimeMs, now: value.now, threads: value.threads, tree: value.tree, scheduler: value.scheduler };
  }

  async types(): Promise<TypesView> {
    return this.#request('GET', '/api/types');
  }

  async jobs(type: string, state: JobState | undefined, limit: number, outcome?: JobOutcome): Promise<JobsView> {
    const query = new URLSearchParams({ limit: String(limit) });
    if (state !== undefined) query.set('state', state);
    if (outcome !== undefined) query.set('outcome', outcome);
    return this.#request('GET', `/api/jobs/${encodeURIComponent(type)}?${query}`);
  }

  async job(type: string, id: string): Promise<JobView> {
    return this.#request('GET', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
  }

  async flow(type: string, id: string): Promise<FlowNode> {
    return this.#request('GET', `/api/flows/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
  }

  async add(type: string, id: string, data: JsonValue, options: AddOptions): Promise<{ type: string; id: string; state: JobState }> {
    return this.#request('POST', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}`, { data, ...options });
  }

  async remove(type: string, id: string): Promise<{ type: string; id: string; removed: boolean }> {
    return this.#request('DELETE', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
  }

  async retry(type: string, id: string): Promise<{ type: string; id: string; state: 'pending' }> {
    return this.#request('POST', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}/retry`);
  }

  async cancel(type: string, id: string): Promise<{ type: string; id: string; cancelled: boolean }> {
    return this.#request('POST', `/api/jobs/${encodeURIComponent(type)}/${encodeURIComponent(id)}/cancel`);
  }

  async setTimeout(type: string, seconds: number | undefined): Promise<{ type: string; timeout: number | null }> {
    const path = `/api/types/${encodeURIComponent(type)}/timeout`;
    return seconds === undefined ? this.#request('DELETE', path) : this.#request('PUT', path, { seconds });
  }

  async limits(type: string): Promise<{ type: string; limits: TypeLimits | null }> {
    return this.#request('GET', `/api/types/${encodeURIComponent(type)}/limits`);
  }

  async schedules(): Promise<SchedulesView> {
    return this.#request('GET', '/api/schedules');
  }

  async setPaused(type: string, paused: boolean): Promise<{ type: string; paused: boolean }> {
    return this.#request('POST', `/api/types/${encodeURIComponent(type)}/${paused ? 'pause' : 'resume'}`);
  }

  async scheduler(): Promise<SchedulerReport> {
    return this.#request('GET', '/api/scheduler');
  }

  async kill(name: string): Promise<KillReport> {
    return this.#request('POST', `/api/actors/${encodeURIComponent(name)}/kill`);
  }

  dashboardUrl(): string {
    return this.#token === undefined ? `${this.#url}/` : `${this.#url}/#token=${encodeURIComponent(this.#token)}`;
  }

  async close(): Promise<void> {}

  async #request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    let res: Response;
    try {
      res = await fetch(`${this.#url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new CliError('unreachable', `the app at ${this.#url} does not answer (${reason})`, { cause: error });
    }
    const text = await res.text();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new CliError('request_failed', `${method} ${path}: HTTP ${res.status}, not JSON: ${text.slice(0, 120)}`);
    }
    if (!res.ok) {
      const error = (value as { error?: { code?: string; message?: string } }).error;
      const hint = res.status === 401 ? ' (give --token, set JOBTREE_TOKEN, or use --path on the app\'s data directory)' : '';
      const code = error?.code ?? `HTTP ${res.status}`;
      const message = error?.message ?? text;
      // A jobs error's message starts with its code already.
      throw new CliError('request_failed', `${message.startsWith(`${code}: `) ? message : `${code}: ${message}`}${hint}`);
    }
    return value as T;
  }
}
