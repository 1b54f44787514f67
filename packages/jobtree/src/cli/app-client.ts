// The backend for a running app: its admin endpoint's JSON API.

import type { AddOptions, FlowNode, JobOutcome, JobState, JsonValue, TypeLimits } from '@jobtree/core';
import type { Backend, JobView, JobsView, KillReport, SchedulerReport, SchedulesView, StatusView, TypesView } from './backend.js';
import { CliError } from './cli-error.js';

/** A request that takes longer than this means the app is stuck, not busy. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Whether `error` is an `unreachable` whose endpoint refused the connection: nothing listens there. */
export function connectionRefused(error: unknown): boolean {
  if (!(error instanceof CliError) || error.code !== 'unreachable') return false;
  return (error.cause as { cause?: { code?: string } } | undefined)?.cause?.code === 'ECONNREFUSED';
}

export class AppClient implements Backend {
  readonly kind = 'app';
  readonly #url: string;
  readonly #token: string | undefined;
  readonly #tokenRefusal: string | undefined;

  /** `tokenRefusal`: why this endpoint must not receive the token; every request that would carry it fails with it instead. */
  constructor(url: string, token: string | undefined, tokenRefusal?: string) {
    this.#url = url.replace(/\/+$/, '');
    this.#token = token;
    this.#tokenRefusal = tokenRefusal;
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

  async jobs(type: string, state: JobState | undefined, limit: number, outcome?: JobOutcome, offset = 0): Promise<JobsView> {
    const query = new URLSearchParams({ limit: String(limit), offset: String(offset) });
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
    this.#checkTokenMayGo();
    return this.#token === undefined ? `${this.#url}/` : `${this.#url}/#token=${encodeURIComponent(this.#token)}`;
  }

  async dashboardOpenUrl(): Promise<string> {
    if (this.#token === undefined) return `${this.#url}/`;
    const { path } = await this.#request<{ path: string }>('POST', '/api/dashboard/codes');
    return `${this.#url}${path}`;
  }

  async close(): Promise<void> {}

  /** What to do about a 401: give a token, or, when one was sent, the app's own (a sent one was wrong, or another app's). */
  #unauthorizedHint(method: string): string {
    if (method !== 'GET' && this.#token !== undefined) {
      return " (the token given was refused: it is not this app's; give the one in the app's data directory's admin.token, or use --path on that directory)";
    }
    return " (give --token, set JOBTREE_TOKEN, or use --path on the app's data directory)";
  }

  #checkTokenMayGo(): void {
    if (this.#token !== undefined && this.#tokenRefusal !== undefined) throw new CliError('untrusted_record', this.#tokenRefusal);
  }

  async #request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && this.#token !== undefined) {
      this.#checkTokenMayGo();
      headers.authorization = `Bearer ${this.#token}`;
    }
    let res: Response;
    try {
      res = await fetch(`${this.#url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      // fetch's own message is always "fetch failed": the reason is its cause's.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
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
      const hint = res.status === 401 ? this.#unauthorizedHint(method) : '';
      const code = error?.code ?? `HTTP ${res.status}`;
      const message = error?.message ?? text;
      // A jobs error's message starts with its code already.
      throw new CliError('request_failed', `${message.startsWith(`${code}: `) ? message : `${code}: ${message}`}${hint}`);
    }
    return value as T;
  }
}
